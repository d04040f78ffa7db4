package report

import (
	"cmp"
	"errors"
	"fmt"
	"io"
	"slices"
	"strconv"

	"gonum.org/v1/plot"
	"gonum.org/v1/plot/plotter"
	"gonum.org/v1/plot/vg"
)

// fileCredits is InfiniBand's per-port credit record (docs/outputs.md, "credits.csv").
const fileCredits = "credits.csv"

// idCredits is the plot of the ports most blocked for credits.
const idCredits = "credits"

// maxCreditBars bounds the ports the credits plot draws (the most blocked ones).
const maxCreditBars = 15

// creditPort is one row of credits.csv.
type creditPort struct {
	port, node string
	blockedUs  float64 // time its VLs spent blocked waiting for credits, summed over VLs (us)
	share      float64 // blocked_us over the run's length
	spells     int     // times a VL became blocked
}

// creditsData is what the report takes from credits.csv: every port's blocked time, most
// blocked first (ties by port name, so the order is the same on every run).
type creditsData struct {
	rows    int
	ports   []creditPort // sorted by blocked_us descending, then port
	blocked int          // ports with blocked_us > 0
	totalUs float64      // blocked_us summed over ports
}

// readCredits reads credits.csv (docs/outputs.md: port, node, blocked_us, blocked_share,
// blocked_spells; other columns are ignored). Errors are *FileError values naming file, line
// and column: a negative number, an empty port name.
func readCredits(file string, r io.Reader) (*creditsData, error) {
	t, err := newCSVTable(file, r, "port", "node", "blocked_us", "blocked_share", "blocked_spells")
	if err != nil {
		return nil, err
	}
	d := &creditsData{}
	for {
		ok, err := t.next()
		if err != nil {
			return nil, err
		}
		if !ok {
			break
		}
		d.rows++
		p := creditPort{port: t.str("port"), node: t.str("node")}
		if p.port == "" {
			return nil, t.cellErr("port", errors.New("empty port name"))
		}
		if p.blockedUs, err = t.nonNeg("blocked_us"); err != nil {
			return nil, err
		}
		if p.share, err = t.nonNeg("blocked_share"); err != nil {
			return nil, err
		}
		spells, err := t.nonNeg("blocked_spells")
		if err != nil {
			return nil, err
		}
		p.spells = int(spells)
		if p.blockedUs > 0 {
			d.blocked++
		}
		d.totalUs += p.blockedUs
		d.ports = append(d.ports, p)
	}
	slices.SortStableFunc(d.ports, func(a, b creditPort) int {
		if c := cmp.Compare(b.blockedUs, a.blockedUs); c != 0 {
			return c
		}
		return cmp.Compare(a.port, b.port)
	})
	return d, nil
}

// creditsFigure is InfiniBand's credit-blocked time per port: the maxCreditBars most blocked
// ports as horizontal bars (most blocked on top), with a table of them under the caption.
// The caller adds it only when the run wrote credits.csv; d must not be nil.
func creditsFigure(d *creditsData) (figure, error) {
	const title = "Ports blocked for credits (InfiniBand)"
	switch {
	case d.rows == 0:
		return noData(idCredits, title, "credits.csv has no rows: no port sent under credits"), nil
	case d.blocked == 0:
		return noData(idCredits, title, fmt.Sprintf("no port of the %d in credits.csv was ever blocked for credits", d.rows)), nil
	}
	n := min(d.blocked, maxCreditBars)
	top := d.ports[:n]
	vals := make(plotter.Values, n)
	var ticks []plot.Tick
	for i, p := range top {
		k := n - 1 - i // the most blocked on top
		vals[k] = p.blockedUs
		ticks = append(ticks, plot.Tick{Value: float64(k), Label: p.port})
	}
	pn := newPanel("", "time blocked for credits (us, summed over VLs)", "").grid()
	bc, err := plotter.NewBarChart(vals, min(vg.Points(14), (panelH*3/2-vg.Points(60))/vg.Length(n)*0.7))
	if err != nil {
		return figure{}, err
	}
	bc.Horizontal = true
	bc.Color = seriesColor(0)
	bc.LineStyle.Width = 0
	pn.p.Add(bc)
	pn.leg.Add("blocked time per port", bc)
	pn.p.Y.Tick.Marker = plot.ConstantTicks(ticks)
	pn.p.Y.Min, pn.p.Y.Max = -0.6, float64(n)-0.4
	pn.p.X.Min = 0
	svg, err := figureSVG(idCredits, title, panelH*3/2, pn)
	caption := fmt.Sprintf("The %d ports whose VLs waited longest with a packet their credit limit did not cover (credits.csv, blocked_us summed over VLs); %d of the %d ports in credits.csv were ever blocked, %s us in all.",
		n, d.blocked, d.rows, fmtNum(d.totalUs))
	if n == 1 {
		caption = fmt.Sprintf("The one port whose VLs waited with a packet their credit limit did not cover (credits.csv, blocked_us summed over VLs), of the %d ports in credits.csv: %s us.", d.rows, fmtNum(d.totalUs))
	}
	tab := &htmlTable{ID: idCredits + "-table", Title: "Most blocked ports (credits.csv)", Head: []string{"port", "node", "blocked_us", "blocked_share", "blocked_spells"}}
	for _, p := range top {
		tab.Rows = append(tab.Rows, []cell{{Text: p.port}, {Text: p.node},
			{Text: fmtNum(p.blockedUs), Num: true}, {Text: strconv.FormatFloat(p.share, 'f', 4, 64), Num: true}, {Text: strconv.Itoa(p.spells), Num: true}})
	}
	if d.blocked > n {
		tab.Note = fmt.Sprintf("%d more blocked ports are in credits.csv.", d.blocked-n)
	}
	return figure{ID: idCredits, Title: title, Caption: caption, SVG: svg, Table: tab}, err
}
