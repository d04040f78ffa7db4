package scenario

import (
	"embed"
	"fmt"
	"sort"
	"strings"
)

//go:embed presets/*.yaml
var presetFS embed.FS

// Presets lists the names of the embedded scenarios (benchmarks and examples), sorted.
func Presets() []string {
	ents, _ := presetFS.ReadDir("presets")
	var names []string
	for _, e := range ents {
		names = append(names, strings.TrimSuffix(e.Name(), ".yaml"))
	}
	sort.Strings(names)
	return names
}

// PresetYAML returns the text of the embedded scenario name. Errors name the presets there are.
func PresetYAML(name string) ([]byte, error) {
	data, err := presetFS.ReadFile("presets/" + name + ".yaml")
	if err != nil {
		return nil, fmt.Errorf("no preset scenario %q; have %s", name, strings.Join(Presets(), ", "))
	}
	return data, nil
}

// Preset parses and resolves the embedded scenario name.
func Preset(name string) (*Scenario, error) {
	data, err := PresetYAML(name)
	if err != nil {
		return nil, err
	}
	sc, err := Parse(data)
	if err != nil {
		return nil, fmt.Errorf("preset %s: %w", name, err)
	}
	return sc, nil
}
