// lockstep serve's page: the topology explorer, the results browser and runs with live
// progress. Plain DOM and SVG, no framework; every answer comes from the server's /api.
"use strict";

const token = new URLSearchParams(location.search).get("token") || "";
const svgNS = "http://www.w3.org/2000/svg";

// el makes an element with attributes and children (strings become text nodes).
function el(tag, attrs, ...kids) {
  const e = document.createElement(tag);
  for (const [k, v] of Object.entries(attrs || {})) {
    if (v === undefined || v === null || v === false) continue;
    if (k === "class") e.className = v;
    else if (k.startsWith("on")) e.addEventListener(k.slice(2), v);
    else e.setAttribute(k, v === true ? "" : v);
  }
  for (const k of kids.flat()) {
    if (k !== undefined && k !== null) e.append(k instanceof Node ? k : String(k));
  }
  return e;
}

// sv makes an SVG element.
function sv(tag, attrs, ...kids) {
  const e = document.createElementNS(svgNS, tag);
  for (const [k, v] of Object.entries(attrs || {})) {
    if (v !== undefined && v !== null) e.setAttribute(k, v);
  }
  for (const k of kids.flat()) {
    if (k !== undefined && k !== null) e.append(k instanceof Node ? k : String(k));
  }
  return e;
}

async function getJSON(url) {
  const r = await fetch(url);
  const body = await r.json();
  if (!r.ok) throw Object.assign(new Error(body.error || r.statusText), body);
  return body;
}

async function postText(url, text) {
  const r = await fetch(url, {method: "POST", body: text, headers: {"X-Lockstep-Token": token, "Content-Type": "text/yaml"}});
  const body = await r.json();
  if (!r.ok) throw Object.assign(new Error(body.error || r.statusText), body);
  return body;
}

// ---- tabs ----

function showTab(name) {
  for (const b of document.querySelectorAll(".tab-button")) b.classList.toggle("active", b.dataset.tab === name);
  for (const s of document.querySelectorAll(".tab")) s.hidden = s.id !== name;
  if (name === "results") loadResults();
}

// ---- topology explorer ----

// The parameters of each kind: the flags of lockstep topo (without dashes).
const KINDS = {
  clos: [
    {k: "tiers", label: "tiers", type: "select", options: ["2", "3"], def: "2"},
    {k: "planes", label: "planes", type: "number", def: "1", min: 1, max: 8},
    {k: "radix", label: "radix (ports per switch)", type: "number", def: "64", min: 4, step: 2},
    {k: "hosts", label: "hosts (0: the most the radix allows)", type: "number", def: "0", min: 0},
    {k: "link", label: "host link", type: "text", def: "800G"},
    {k: "fabric-link", label: "fabric link (default: host link)", type: "text", def: ""},
    {k: "oversub", label: "oversubscription per tier (e.g. 3 or 1,2)", type: "text", def: ""},
    {k: "parallel", label: "parallel links per level (e.g. 2 or 1,2)", type: "text", def: ""},
    {k: "scale-up-gpus", label: "scale-up domain GPUs (0: none)", type: "number", def: "0", min: 0},
    {k: "scale-up-rate", label: "scale-up rate per GPU (e.g. 7.2T)", type: "text", def: ""},
  ],
  fat_tree: [
    {k: "k", label: "k (switch radix; k pods)", type: "number", def: "16", min: 4, step: 2},
    {k: "planes", label: "planes", type: "number", def: "1", min: 1, max: 8},
    {k: "link", label: "host link", type: "text", def: "400G"},
    {k: "oversub", label: "T0 oversubscription (e.g. 3)", type: "text", def: ""},
    {k: "scale-up-gpus", label: "scale-up domain GPUs (0: none)", type: "number", def: "0", min: 0},
    {k: "scale-up-rate", label: "scale-up rate per GPU", type: "text", def: ""},
  ],
  rail: [
    {k: "servers", label: "servers", type: "number", def: "16", min: 1},
    {k: "gpus-per-server", label: "GPUs (rails) per server", type: "number", def: "8", min: 1},
    {k: "planes", label: "planes", type: "number", def: "1", min: 1, max: 8},
    {k: "radix", label: "radix", type: "number", def: "64", min: 4, step: 2},
    {k: "link", label: "host link", type: "text", def: "400G"},
    {k: "rail-only", label: "rail-only (no spine)", type: "checkbox", def: false},
    {k: "scale-up-gpus", label: "scale-up domain GPUs (e.g. 8, 72)", type: "number", def: "8", min: 0},
    {k: "scale-up-rate", label: "scale-up rate per GPU", type: "text", def: "3.6T"},
  ],
  torus: [
    {k: "dims", label: "dims (k1xk2xk3)", type: "text", def: "4x4x8"},
    {k: "link", label: "chip-to-chip link", type: "text", def: "400G"},
    {k: "twisted", label: "twisted wrap-around (k x k x 2k)", type: "checkbox", def: false},
    {k: "routing", label: "routing", type: "select", options: ["", "minimal", "dor"], def: ""},
    {k: "ocs", label: "cubes joined by OCS", type: "checkbox", def: false},
    {k: "cube-size", label: "cube edge (OCS; default 4)", type: "number", def: "", min: 0},
    {k: "spare-cubes", label: "spare cubes (OCS)", type: "number", def: "", min: 0},
  ],
  mesh: [
    {k: "nodes", label: "nodes", type: "number", def: "16", min: 2},
    {k: "link", label: "link", type: "text", def: "100G"},
    {k: "ports-per-node", label: "ports per node (multiple of nodes-1)", type: "number", def: "", min: 0},
  ],
};
const KIND_TITLES = {clos: "Clos", fat_tree: "Fat-tree", rail: "Rail-optimised", torus: "3D torus", mesh: "Full mesh"};

let designCount = 0;

// addDesign adds a column with its own kind and parameters.
function addDesign(kind) {
  const box = document.getElementById("designs");
  if (box.children.length >= 3) return;
  const n = designCount++;
  const col = el("div", {class: "design", "data-design": String(n), "data-state": "loading"});
  const kindSel = el("select", {class: "kind", name: "kind", "aria-label": "topology kind"},
    Object.keys(KINDS).map(k => el("option", {value: k, selected: k === kind}, KIND_TITLES[k])));
  const form = el("form", {class: "params", onsubmit: e => e.preventDefault()});
  const close = el("button", {type: "button", class: "close", title: "remove this design", onclick: () => { col.remove(); syncAdd(); }}, "×");
  col.append(el("div", {class: "design-head"}, kindSel, close), form,
    el("div", {class: "error", hidden: true}),
    el("div", {class: "label"}),
    el("div", {class: "drawing"}),
    el("table", {class: "sizing"}),
    el("table", {class: "blast"}),
    el("code", {class: "command"}));
  box.append(col);
  const build = () => {
    form.replaceChildren(...KINDS[kindSel.value].map(p => param(p)));
    refresh(col);
  };
  kindSel.addEventListener("change", build);
  form.addEventListener("change", () => refresh(col));
  let timer = 0;
  form.addEventListener("input", ev => {
    if (ev.target.type === "checkbox" || ev.target.tagName === "SELECT") return;
    clearTimeout(timer);
    timer = setTimeout(() => refresh(col), 300);
  });
  build();
  syncAdd();
}

function syncAdd() {
  document.getElementById("add-design").disabled = document.getElementById("designs").children.length >= 3;
}

// param is one labelled form control.
function param(p) {
  let input;
  if (p.type === "select") {
    input = el("select", {name: p.k}, p.options.map(o => el("option", {value: o, selected: o === p.def}, o === "" ? "(default)" : o)));
  } else if (p.type === "checkbox") {
    input = el("input", {type: "checkbox", name: p.k, checked: p.def});
  } else {
    input = el("input", {type: p.type, name: p.k, value: p.def, min: p.min, max: p.max, step: p.step, size: 10});
  }
  return el("label", {class: "param"}, el("span", {}, p.label), input);
}

// query is the design's parameters as /api/topo takes them: lockstep topo's flags.
function query(col) {
  const q = new URLSearchParams();
  q.set("kind", col.querySelector("select.kind").value);
  for (const inp of col.querySelectorAll(".params [name]")) {
    if (inp.type === "checkbox") {
      if (inp.checked) q.set(inp.name, "true");
    } else if (inp.value !== "") {
      q.set(inp.name, inp.value);
    }
  }
  return q.toString();
}

async function refresh(col) {
  const q = query(col);
  col.dataset.state = "loading";
  col.dataset.query = q;
  const err = col.querySelector(".error");
  try {
    const a = await getJSON("/api/topo?" + q);
    if (col.dataset.query !== q) return; // a newer request is on its way
    err.hidden = true;
    render(col, a);
    col.dataset.state = "ready";
  } catch (e) {
    if (col.dataset.query !== q) return;
    err.hidden = false;
    err.textContent = e.message;
    col.dataset.state = "error";
  }
}

function render(col, a) {
  col.querySelector(".label").textContent = KIND_TITLES[a.kind] + ": " + a.label;
  const sizing = col.querySelector("table.sizing");
  sizing.replaceChildren(el("caption", {}, "sizing"),
    ...a.rows.map(r => el("tr", {"data-label": r[0]}, el("th", {}, r[0]), el("td", {}, r[1]))),
    ...a.notes.map(n => el("tr", {"data-label": "note"}, el("th", {}, "note"), el("td", {}, n))));
  const blast = col.querySelector("table.blast");
  blast.replaceChildren(el("caption", {}, "blast radius of one failure"),
    el("tr", {}, el("th", {}, "element"), el("th", {}, "loses"), el("th", {}, "of"), el("th", {}, "affected")),
    ...a.blast.map(b => el("tr", {"data-element": b[0]}, el("td", {}, b[0]), el("td", {}, b[1]), el("td", {}, b[2]), el("td", {}, b[3] + (b[4] ? " " + b[4] : "")))));
  col.querySelector(".command").textContent = a.command;
  const d = col.querySelector(".drawing");
  d.replaceChildren(draw(a.drawing), el("p", {class: "hint"}, a.drawing.note));
}

// select shows what was clicked: its name as faults: writes it.
function select(what, name, extra) {
  const box = document.getElementById("selection");
  const key = {link: "link", switch: "switch", nic: "nic", chip: "switch"}[what] || what;
  const target = what === "chip" ? name + ".r" : name;
  box.replaceChildren(el("strong", {}, what + " "), el("code", {class: "selected-name"}, name),
    el("span", {class: "hint"}, extra ? " " + extra : ""),
    el("div", {}, "in a scenario: ", el("code", {class: "snippet"}, "faults: [{at: 1ms, " + key + ": " + target + ", action: down}]")));
  box.dataset.name = name;
  for (const s of document.querySelectorAll(".picked")) s.classList.remove("picked");
}

function clickable(node, what, name, extra) {
  node.classList.add("pick");
  node.setAttribute("data-name", name);
  node.addEventListener("click", ev => { ev.stopPropagation(); select(what, name, extra); node.classList.add("picked"); });
  node.append(sv("title", {}, name));
  return node;
}

function draw(m) {
  if (m.style === "torus") return drawTorus(m);
  if (m.style === "mesh") return drawMesh(m);
  return drawTiers(m);
}

// drawTiers draws hosts at the bottom and each switch tier above, plane 0.
function drawTiers(m) {
  const W = 560, rowGap = 90, top = 30, left = 70;
  const rows = m.rows.length;
  const H = top + (rows - 1) * rowGap + 60 + (m.domain_gpus ? 20 : 0);
  const s = sv("svg", {class: "topo", viewBox: `0 0 ${W} ${H}`, width: W, height: H, role: "img"});
  const y = r => top + (rows - 1 - r) * rowGap;
  const pos = new Map();
  const perRow = m.rows.map(r => r.shown);
  m.nodes.forEach((n, i) => {
    const span = (W - left - 10) / Math.max(1, perRow[n.row]);
    pos.set(i, [left + (n.pos + 0.5) * span, y(n.row)]);
  });
  // planes: a stack of outlines behind each switch row
  for (let r = 1; r < rows; r++) {
    for (let p = Math.min(m.planes, 4) - 1; p >= 1; p--) {
      s.append(sv("rect", {x: left - 4 + 5 * p, y: y(r) - 14 - 5 * p, width: W - left - 2, height: 28, rx: 4, class: "plane-shadow"}));
    }
  }
  const links = sv("g", {class: "links"});
  for (const l of m.links) {
    const [x1, y1] = pos.get(l.a), [x2, y2] = pos.get(l.b);
    const line = sv("line", {x1, y1, x2, y2, class: "link", "stroke-width": Math.min(4, 1 + Math.log2(l.count))});
    const hit = sv("line", {x1, y1, x2, y2, class: "link-hit"});
    const g = sv("g", {}, line, hit);
    links.append(clickable(g, "link", l.name, l.count > 1 ? `(and ${l.count - 1} parallel link(s) between the same two)` : ""));
  }
  s.append(links);
  m.rows.forEach((r, i) => {
    const t = sv("text", {x: 4, y: y(i) + 4, class: "row-label"}, r.name);
    const c = sv("text", {x: 4, y: y(i) + 18, class: "row-count"}, (r.count > r.shown ? `${r.shown} of ` : "") + r.count.toLocaleString("en-US"));
    s.append(t, c);
  });
  m.nodes.forEach((n, i) => {
    const [cx, cy] = pos.get(i);
    if (n.host) {
      const c = sv("circle", {cx, cy, r: 6, class: "host"});
      s.append(clickable(sv("g", {}, c), "nic", n.port, `(host ${n.name}, its NIC port in plane 0)`));
    } else {
      const w = Math.min(26, (W - left) / Math.max(1, perRow[n.row]) - 4);
      const rct = sv("rect", {x: cx - w / 2, y: cy - 9, width: w, height: 18, rx: 3, class: "switch tier" + (n.row - 1)});
      s.append(clickable(sv("g", {}, rct), "switch", n.name));
    }
  });
  if (m.domain_gpus) {
    // scale-up domains: a bracket under the drawn hosts of each domain
    const groups = new Map();
    m.nodes.forEach((n, i) => {
      if (!n.host) return;
      const d = Math.floor(n.index / m.domain_gpus);
      if (!groups.has(d)) groups.set(d, []);
      groups.get(d).push(pos.get(i)[0]);
    });
    for (const [d, xs] of groups) {
      const x0 = Math.min(...xs) - 8, x1 = Math.max(...xs) + 8, yy = y(0) + 14;
      s.append(sv("rect", {x: x0, y: yy, width: x1 - x0, height: 6, rx: 3, class: "domain"}),
        sv("text", {x: (x0 + x1) / 2, y: yy + 18, class: "domain-label", "text-anchor": "middle"}, `domain ${d}`));
    }
    s.append(sv("text", {x: 4, y: y(0) + 36, class: "row-count"}, `${m.domains} scale-up domains of ${m.domain_gpus}`));
  }
  return s;
}

// drawTorus draws one face of chips on a grid, wrap-around links as arcs outside it.
function drawTorus(m) {
  const nx = Math.max(...m.nodes.map(n => n.x)) + 1, ny = Math.max(...m.nodes.map(n => n.y)) + 1;
  const cell = Math.min(56, 440 / Math.max(nx, ny)), pad = 40;
  const W = pad * 2 + (nx - 1) * cell, H = pad * 2 + (ny - 1) * cell + 20;
  const s = sv("svg", {class: "topo", viewBox: `0 0 ${W} ${H}`, width: W, height: H, role: "img"});
  const at = n => [pad + n.x * cell, pad + n.y * cell];
  if (m.cube_size) {
    for (let cx = 0; cx < nx; cx += m.cube_size) {
      for (let cy = 0; cy < ny; cy += m.cube_size) {
        const w = (Math.min(m.cube_size, nx - cx) - 1) * cell + 24, h = (Math.min(m.cube_size, ny - cy) - 1) * cell + 24;
        s.append(sv("rect", {x: pad + cx * cell - 12, y: pad + cy * cell - 12, width: w, height: h, rx: 6, class: "cube"}));
      }
    }
  }
  for (const l of m.links) {
    const [x1, y1] = at(m.nodes[l.a]), [x2, y2] = at(m.nodes[l.b]);
    let shape;
    if (l.wrap) {
      // a wrap-around link leaves the face at one edge and comes back at the other: two
      // dashed stubs, one element
      // (a twisted torus's wrap-around also shifts along the other dimension)
      const horiz = Math.abs(x1 - x2) > 1.5 * cell, out = pad - 6;
      const [hi, lo] = (horiz ? x1 > x2 : y1 > y2) ? [[x1, y1], [x2, y2]] : [[x2, y2], [x1, y1]];
      const d = horiz ? `M${hi[0]},${hi[1]} h${out} M${lo[0]},${lo[1]} h${-out}`
        : `M${hi[0]},${hi[1]} v${out} M${lo[0]},${lo[1]} v${-out}`;
      shape = sv("path", {d, class: "link wrap"});
    } else {
      shape = sv("line", {x1, y1, x2, y2, class: "link"});
    }
    s.append(clickable(sv("g", {}, shape), "link", l.name, l.wrap ? "(wrap-around)" : ""));
  }
  for (const n of m.nodes) {
    const [cx, cy] = at(n);
    s.append(clickable(sv("g", {}, sv("rect", {x: cx - 8, y: cy - 8, width: 16, height: 16, rx: 3, class: "chip"})), "chip", n.name, `(its router ${n.port})`));
  }
  s.append(sv("text", {x: pad - 12, y: H - 8, class: "row-count"},
    `${m.dims.join("x")} chips${m.twisted ? ", twisted" : ""}${m.cube_size ? `, ${m.cube_size}^3 cubes joined by OCS` : ""}`));
  return s;
}

// drawMesh draws the nodes on a circle with every drawn pair's link.
function drawMesh(m) {
  const W = 420, H = 420, R = 170, c = 210;
  const s = sv("svg", {class: "topo", viewBox: `0 0 ${W} ${H}`, width: W, height: H, role: "img"});
  const n = m.nodes.length;
  const at = i => [c + R * Math.cos(2 * Math.PI * i / n - Math.PI / 2), c + R * Math.sin(2 * Math.PI * i / n - Math.PI / 2)];
  for (const l of m.links) {
    const [x1, y1] = at(l.a), [x2, y2] = at(l.b);
    s.append(clickable(sv("g", {}, sv("line", {x1, y1, x2, y2, class: "link thin"}), sv("line", {x1, y1, x2, y2, class: "link-hit"})), "link", l.name));
  }
  m.nodes.forEach((nd, i) => {
    const [cx, cy] = at(i);
    s.append(clickable(sv("g", {}, sv("circle", {cx, cy, r: 8, class: "chip"})), "chip", nd.name, `(its router ${nd.port})`));
  });
  return s;
}

// ---- results ----

let resultsCache = [];

async function loadResults() {
  const tbody = document.querySelector("#results-table tbody");
  try {
    const a = await getJSON("/api/results");
    resultsCache = a.folders;
    document.getElementById("results-dir").textContent = `${a.folders.length} folder(s) in ${a.dir}`;
    tbody.replaceChildren(...a.folders.map(f => el("tr", {"data-dir": f.dir},
      el("td", {}, el("input", {type: "checkbox", class: "pick-run", value: f.dir, "aria-label": "select " + f.dir})),
      el("td", {}, f.report ? el("a", {href: f.report, target: "_blank", rel: "noopener"}, f.dir) : f.dir),
      el("td", {}, f.scenario),
      el("td", {class: f.failed ? "bad" : ""}, f.failed ? "failed" + (f.failure_reason ? ": " + f.failure_reason : "") : f.complete ? "complete" : "incomplete"),
      el("td", {class: "headline"}, Object.entries(f.headline).map(([k, v]) => el("span", {}, `${k} ${fmt(v)}`))),
      el("td", {class: "files"}, f.files.includes("links.csv") ? el("button", {type: "button", class: "plot-run", onclick: () => plotRun(f.dir)}, "plot") : null, f.files.map(n => el("a", {href: "/results/" + f.dir.split("/").map(encodeURIComponent).join("/") + "/" + encodeURIComponent(n), target: "_blank", rel: "noopener"}, n))))));
  } catch (e) {
    tbody.replaceChildren(el("tr", {}, el("td", {colspan: 6, class: "bad"}, e.message)));
  }
}

function fmt(v) {
  if (typeof v === "number") return Number.isInteger(v) ? v.toLocaleString("en-US") : v.toPrecision(4);
  return String(v);
}

// compareSelected shows the selected runs' headline figures side by side, with the ratio
// of each to the first run's.
function compareSelected() {
  const picked = [...document.querySelectorAll(".pick-run:checked")].map(c => resultsCache.find(f => f.dir === c.value)).filter(Boolean);
  const box = document.getElementById("compare");
  if (picked.length < 2) {
    box.replaceChildren(el("p", {class: "hint"}, "Select two or more runs to compare."));
    return;
  }
  const keys = [...new Set(picked.flatMap(f => Object.keys(f.headline)))];
  const page = el("div", {class: "compare-page hint"}, "writing compare.html ...");
  fetch("/api/compare", {method: "POST", headers: {"X-Lockstep-Token": token, "Content-Type": "application/json"}, body: JSON.stringify({dirs: picked.map(f => f.dir)})})
    .then(async r => {
      const a = await r.json();
      if (!r.ok) throw new Error(a.error || r.statusText);
      page.replaceChildren(el("a", {href: a.page, target: "_blank", rel: "noopener", id: "compare-link"}, "open the comparison (compare.html: plots overlaid)"), " ", a.dir);
    })
    .catch(e => { page.className = "compare-page bad"; page.textContent = e.message; });
  box.replaceChildren(page, el("table", {class: "compare-table"},
    el("tr", {}, el("th", {}, "figure"), picked.map(f => el("th", {}, f.report ? el("a", {href: f.report, target: "_blank", rel: "noopener"}, f.dir) : f.dir))),
    keys.map(k => el("tr", {}, el("th", {}, k), picked.map(f => {
      const v = f.headline[k], v0 = picked[0].headline[k];
      const ratio = typeof v === "number" && typeof v0 === "number" && v0 !== 0 && f !== picked[0] ? ` (${(v / v0).toFixed(2)}x)` : "";
      return el("td", {}, v === undefined ? "-" : fmt(v) + ratio);
    })))));
}

// ---- an interactive plot of a run's links.csv ----

const COLORS = ["#2f6fba", "#d0562e", "#3a9a5b", "#8a5cc2", "#c49a1a", "#1b9aa5", "#b8467a", "#6b6b6b"];

async function plotRun(dir) {
  const box = document.getElementById("chart");
  box.hidden = false;
  box.replaceChildren(el("p", {class: "hint"}, "reading " + dir + "/links.csv ..."));
  try {
    const data = await getJSON("/api/series?dir=" + encodeURIComponent(dir));
    box.replaceChildren(el("h2", {}, `${dir}: utilisation over time`),
      el("p", {class: "hint"}, "Hover for values; drag across the plot to zoom on time, double-click to zoom out; click a legend entry to hide or show its series."),
      lineChart(data));
  } catch (e) {
    box.replaceChildren(el("p", {class: "bad"}, e.message));
  }
}

// lineChart draws data's series against its x axis (µs) with hover values, zoom on the
// time axis and series toggled from the legend.
function lineChart(data) {
  const W = 900, H = 320, L = 56, R = 170, T = 12, B = 40;
  const s = sv("svg", {class: "chart-svg", id: "chart-svg", viewBox: `0 0 ${W} ${H}`, width: W, height: H, role: "img"});
  const hidden = new Set();
  let x0 = data.x[0] || 0, x1 = data.x[data.x.length - 1] || 1;
  if (x1 <= x0) x1 = x0 + 1;
  const hover = el("div", {class: "chart-hover", id: "chart-hover"}, " ");
  const px = x => L + (x - x0) / (x1 - x0) * (W - L - R);
  const ux = p => x0 + (p - L) / (W - L - R) * (x1 - x0);
  const toSvgX = ev => { const r = s.getBoundingClientRect(); return (ev.clientX - r.left) * W / r.width; };
  let drag = null;
  function render() {
    s.replaceChildren();
    s.dataset.x0 = String(x0);
    s.dataset.x1 = String(x1);
    const idx = data.x.map((x, i) => i).filter(i => data.x[i] >= x0 && data.x[i] <= x1);
    let ymax = 1;
    data.series.forEach((se, k) => { if (!hidden.has(k)) for (const i of idx) ymax = Math.max(ymax, se.y[i]); });
    ymax = Math.ceil(ymax / 10) * 10;
    const py = y => T + (1 - y / ymax) * (H - T - B);
    for (let k = 0; k <= 5; k++) {
      const y = ymax * k / 5;
      s.append(sv("line", {x1: L, x2: W - R, y1: py(y), y2: py(y), class: "grid"}), sv("text", {x: L - 6, y: py(y) + 4, "text-anchor": "end", class: "tick"}, String(Math.round(y))));
    }
    for (let k = 0; k <= 6; k++) {
      const x = x0 + (x1 - x0) * k / 6;
      s.append(sv("text", {x: px(x), y: H - B + 16, "text-anchor": "middle", class: "tick"}, x.toPrecision(4)));
    }
    s.append(sv("text", {x: (L + W - R) / 2, y: H - 6, "text-anchor": "middle", class: "axis"}, "time (µs)"),
      sv("text", {x: 12, y: (T + H - B) / 2, transform: `rotate(-90 12 ${(T + H - B) / 2})`, "text-anchor": "middle", class: "axis"}, data.y_label));
    data.series.forEach((se, k) => {
      if (hidden.has(k) || idx.length === 0) return;
      const d = idx.map((i, j) => (j ? "L" : "M") + px(data.x[i]).toFixed(1) + "," + py(se.y[i]).toFixed(1)).join("");
      s.append(sv("path", {d, class: "series", stroke: COLORS[k % COLORS.length], "data-series": se.name}));
    });
    data.series.forEach((se, k) => {
      const y = T + 10 + k * 20;
      const g = sv("g", {class: "legend-item" + (hidden.has(k) ? " off" : ""), "data-series": se.name},
        sv("rect", {x: W - R + 12, y: y - 8, width: 14, height: 10, fill: COLORS[k % COLORS.length]}),
        sv("text", {x: W - R + 32, y: y + 1, class: "tick"}, `${se.name} (${se.ports} ports)`));
      g.addEventListener("click", () => { hidden.has(k) ? hidden.delete(k) : hidden.add(k); render(); });
      s.append(g);
    });
    const rule = sv("line", {x1: 0, x2: 0, y1: T, y2: H - B, class: "rule", visibility: "hidden"});
    const band = sv("rect", {x: 0, y: T, width: 0, height: H - T - B, class: "zoom-band", visibility: "hidden"});
    const overlay = sv("rect", {x: L, y: T, width: W - L - R, height: H - T - B, class: "overlay"});
    s.append(rule, band, overlay);
    overlay.addEventListener("mousemove", ev => {
      const p = toSvgX(ev);
      if (drag !== null) {
        band.setAttribute("x", Math.min(drag, p));
        band.setAttribute("width", Math.abs(p - drag));
        band.setAttribute("visibility", "visible");
      }
      if (idx.length === 0) return;
      const x = ux(p);
      let best = idx[0];
      for (const i of idx) if (Math.abs(data.x[i] - x) < Math.abs(data.x[best] - x)) best = i;
      rule.setAttribute("x1", px(data.x[best]));
      rule.setAttribute("x2", px(data.x[best]));
      rule.setAttribute("visibility", "visible");
      hover.textContent = `t = ${data.x[best]} µs: ` + data.series.filter((se, k) => !hidden.has(k)).map(se => `${se.name} ${se.y[best].toFixed(1)}%`).join(", ");
    });
    overlay.addEventListener("mousedown", ev => { drag = toSvgX(ev); ev.preventDefault(); });
    overlay.addEventListener("mouseup", ev => {
      const p = toSvgX(ev);
      if (drag !== null && Math.abs(p - drag) > 4) {
        const a = ux(Math.min(drag, p)), b = ux(Math.max(drag, p));
        x0 = a; x1 = b;
        drag = null;
        render();
        return;
      }
      drag = null;
      band.setAttribute("visibility", "hidden");
    });
    overlay.addEventListener("dblclick", () => { x0 = data.x[0]; x1 = data.x[data.x.length - 1]; if (x1 <= x0) x1 = x0 + 1; render(); });
  }
  render();
  return el("div", {}, s, hover);
}

// ---- runs ----

const SAMPLE = `name: small-perm
topology: {clos: {tiers: 2, planes: 2, radix: 8, hosts: 16, host_link: 100G, hop_latency: 500ns}}
transport: {kind: mrc}
traffic: [{pattern: permutation, bytes: 2MiB}]
faults: [{at: 20us, link: h0.p1, action: down}]
`;

let validateTimer = 0, validateSeq = 0;

async function validateNow() {
  const text = document.getElementById("scenario-text").value;
  const box = document.getElementById("validation");
  const seq = ++validateSeq;
  box.dataset.state = "checking";
  try {
    const v = await postText("/api/validate", text);
    if (seq !== validateSeq) return;
    if (!v.valid) throw Object.assign(new Error(v.error), v);
    const e = v.estimate;
    box.className = "validation ok";
    box.replaceChildren(el("strong", {}, "valid: "), v.describe,
      el("div", {class: "hint"}, `estimate: ${e.engine} engine, ${e.hosts} hosts, memory ${(e.memory_bytes / 1e6).toPrecision(3)} MB` +
        (e.wall_max_ns ? `, wall ${(e.wall_min_ns / 1e9).toPrecision(2)} .. ${(e.wall_max_ns / 1e9).toPrecision(2)} s` : "")),
      v.warnings.map(w => el("div", {class: "warn"}, "warning: " + w)));
    box.dataset.state = "valid";
  } catch (err) {
    if (seq !== validateSeq) return;
    box.className = "validation bad";
    const where = err.path ? err.path + (err.line ? ` (line ${err.line})` : "") : err.line ? `line ${err.line}` : "";
    box.replaceChildren(el("strong", {}, "invalid"), where ? el("span", {}, " at ", el("code", {class: "field"}, where)) : null,
      el("div", {class: "message"}, err.message),
      err.line ? el("button", {type: "button", onclick: () => gotoLine(err.line)}, `go to line ${err.line}`) : null);
    box.dataset.state = "invalid";
  }
}

function gotoLine(n) {
  const ta = document.getElementById("scenario-text");
  const lines = ta.value.split("\n");
  let start = 0;
  for (let i = 0; i < n - 1 && i < lines.length; i++) start += lines[i].length + 1;
  ta.focus();
  ta.setSelectionRange(start, start + (lines[n - 1] || "").length);
}

async function startRun() {
  const status = document.getElementById("run-status");
  const bar = document.getElementById("run-progress");
  const label = document.getElementById("run-label");
  const done = document.getElementById("run-done");
  done.replaceChildren();
  status.dataset.state = "starting";
  let r;
  try {
    r = await postText("/api/run", document.getElementById("scenario-text").value);
  } catch (err) {
    status.textContent = "not started: " + err.message;
    status.dataset.state = "refused";
    return;
  }
  status.textContent = `run ${r.id} (${r.name}) queued`;
  bar.hidden = false;
  bar.removeAttribute("value");
  const es = new EventSource(r.events);
  es.addEventListener("started", () => { status.textContent = `run ${r.id} (${r.name}) running`; status.dataset.state = "running"; });
  es.addEventListener("progress", ev => {
    const p = JSON.parse(ev.data);
    if (p.percent >= 0) bar.value = p.percent;
    label.textContent = p.label;
    status.dataset.progress = String((Number(status.dataset.progress) || 0) + 1);
  });
  es.addEventListener("done", ev => {
    es.close();
    const o = JSON.parse(ev.data);
    bar.value = 100;
    status.textContent = `run ${r.id} (${r.name}) ${o.failed ? "failed: " + o.failure_reason : o.complete ? "done" : "stopped early"}`;
    status.dataset.state = "done";
    done.replaceChildren(el("a", {href: o.report, target: "_blank", rel: "noopener", id: "report-link"}, "open the report"),
      " ", el("span", {class: "hint"}, o.dir),
      el("div", {class: "headline"}, Object.entries(o.headline || {}).map(([k, v]) => el("span", {}, `${k} ${fmt(v)}`))),
      (o.warnings || []).map(w => el("div", {class: "warn"}, "warning: " + w)));
    loadRuns();
  });
  es.addEventListener("run_error", ev => {
    es.close();
    status.textContent = `run ${r.id} failed: ` + JSON.parse(ev.data).error;
    status.dataset.state = "failed";
    bar.hidden = true;
  });
}

async function loadRuns() {
  try {
    const runs = await getJSON("/api/runs");
    document.getElementById("run-list").replaceChildren(...runs.map(r => el("li", {},
      r.finished ? el("a", {href: "/results/" + r.dir.split("/").map(encodeURIComponent).join("/") + "/report.html", target: "_blank", rel: "noopener"}, r.dir) : r.dir,
      " ", el("span", {class: "hint"}, r.finished ? "finished" : "running"))));
  } catch (e) {
    // the list is a convenience; the status line says what matters
  }
}

// ---- start ----

function start() {
  document.getElementById("no-token").hidden = token !== "";
  for (const b of document.querySelectorAll(".tab-button")) b.addEventListener("click", () => showTab(b.dataset.tab));
  document.getElementById("add-design").addEventListener("click", () => {
    const used = [...document.querySelectorAll(".design select.kind")].map(s => s.value);
    addDesign(["clos", "torus", "rail", "fat_tree", "mesh"].find(k => !used.includes(k)) || "clos");
  });
  document.getElementById("refresh-results").addEventListener("click", loadResults);
  document.getElementById("compare-results").addEventListener("click", compareSelected);
  const ta = document.getElementById("scenario-text");
  ta.value = SAMPLE;
  ta.addEventListener("input", () => { clearTimeout(validateTimer); validateTimer = setTimeout(validateNow, 400); });
  document.getElementById("upload").addEventListener("change", async ev => {
    const f = ev.target.files[0];
    if (!f) return;
    ta.value = await f.text();
    validateNow();
  });
  document.getElementById("start-run").addEventListener("click", startRun);
  addDesign("clos");
  if (token) validateNow();
  loadRuns();
}

start();
