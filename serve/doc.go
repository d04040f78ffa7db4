// Package serve is the HTTP side of `lockstep serve`: a local web application, served by the
// binary itself from its embedded assets (assets/: one HTML page, one stylesheet, one script
// of our own; no framework, no CDN, no web fonts), with a JSON API whose answers come from a
// [Backend] (cmd/lockstep supplies it: the topo, validate and run commands' own code).
//
// # Routes
//
//	GET  /                          the page (topology explorer, results browser, runs)
//	GET  /assets/{file}             its stylesheet and script
//	GET  /api/topo?kind=clos&...    sizing and drawing of one fabric (Backend.Topo)
//	GET  /api/results               the results folders under --results, with summary.json's headline
//	GET  /api/series?dir=RUN        links.csv as mean utilisation per class of port over time
//	GET  /results/{path...}         a file inside the results directory, read-only
//	POST /api/validate              scenario YAML body -> resolved, estimated, or the error at its field
//	POST /api/run                   scenario YAML body -> {"id": ...}; the run starts (or queues)
//	GET  /api/run/{id}/events       server-sent events: queued, started, progress, done or run_error
//	GET  /api/runs                  the runs started since the server started
//	POST /api/compare               {"dirs": [...]} -> report.WriteCompare's compare.html in a new folder
//
// # Security
//
// [CheckAddr] refuses a listen address that is not loopback unless allowRemote is set (then
// [Server] prints a warning). Every POST must carry the per-start random token ([NewToken],
// 128 bits from crypto/rand) in the X-Lockstep-Token header or the token query parameter, or
// gets 403. While the server is loopback-only, a request whose Host is not a loopback name
// gets 403 too (a DNS-rebinding page cannot read results). Paths are refused with 400 when a
// segment, after URL decoding, is ".." (so "%2e%2e" too); a results file is served only when
// filepath.EvalSymlinks of it lies inside the results directory's own resolved path (a
// symlink pointing outside gets 403) and is a regular file. Request bodies are limited to
// [MaxUploadBytes] (http.MaxBytesReader): a larger upload gets 413 with a message naming the
// limit. The page's Content-Security-Policy allows only its own origin; results files are
// served with a policy that forbids scripts.
package serve
