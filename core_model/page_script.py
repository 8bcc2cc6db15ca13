"""The exported page's script: draws the maps from the embedded data, hover read-out and highlights, the large view.

Plain JavaScript with no library, read by the browser from the page itself (no network). It reads the JSON in
<script id="page-data" type="application/json"> (core_model.page_data plus the colour stops) and writes every
label with textContent, so no token or file name can inject markup.
"""

from __future__ import annotations

SCRIPT = r"""
"use strict";
const D = JSON.parse(document.getElementById("page-data").textContent);
const STOPS = (D.diverging ? D.style.diverging : D.style.sequential).map(hexRgb);
const SIDES = { source: D.source_tokens, target: D.target_tokens };
const MAPS = [];  // every drawn map: {kind, layer, head, values, valid, canvas, over, cell}
const SMALL_PX = 132, LARGE_PX = 620;
const HINT = "Hover a cell: its value, its query and key (positions count from 0; a decoder query also names what "
  + "the model writes there).";

function hexRgb(h) { return [1, 3, 5].map((i) => parseInt(h.slice(i, i + 2), 16)); }
function el(tag, cls, text) {
  const e = document.createElement(tag);
  if (cls) e.className = cls;
  if (text !== undefined) e.textContent = text;
  return e;
}
function colour(v, lo, hi) {
  if (v === null) return D.style.mask;
  let t = hi > lo ? (v - lo) / (hi - lo) : 0.5;
  t = Math.min(1, Math.max(0, t)) * (STOPS.length - 1);
  const i = Math.min(Math.floor(t), STOPS.length - 2), f = t - i, a = STOPS[i], b = STOPS[i + 1];
  return "rgb(" + [0, 1, 2].map((c) => Math.round(a[c] + f * (b[c] - a[c]))).join(",") + ")";
}
function fmt(v) { return v === null ? "masked" : v.toFixed(3); }
function mapOf(kind, layer, head) {
  const k = D.kinds[kind];
  return head < 0 ? k.average[layer] : k.maps[layer][head];
}
function shownValue(m, i, j) {
  const v = m.values[i][j];
  return D.kinds[m.kind].valid[i][j] ? v : null;
}
function drawMap(m) {
  const k = D.kinds[m.kind], tq = m.values.length, tk = m.values[0].length, ctx = m.canvas.getContext("2d");
  m.canvas.width = m.over.width = tk * m.cell;
  m.canvas.height = m.over.height = tq * m.cell;
  for (let i = 0; i < tq; i++) {
    for (let j = 0; j < tk; j++) {
      ctx.fillStyle = colour(shownValue(m, i, j), k.levels[0], k.levels[1]);
      ctx.fillRect(j * m.cell, i * m.cell, m.cell, m.cell);
    }
  }
}
function headName(layer, head) { return "L" + (layer + 1) + " " + (head < 0 ? "avg" : "H" + (head + 1)); }
function cellText(m, i, j) {
  const k = D.kinds[m.kind], q = SIDES[k.sides[0]][i], key = SIDES[k.sides[1]][j];
  const raw = m.head < 0 ? shownValue(m, i, j) : m.values[i][j];
  const value = k.valid[i][j] && raw !== null ? raw.toFixed(3) : "masked";
  const writes = k.sides[0] === "target" && i < D.output_tokens.length ? " (writes '" + D.output_tokens[i] + "')" : "";
  return k.title + " " + headName(m.layer, m.head) + " query " + i + " '" + q + "'" + writes + " -> key " + j +
    " '" + key + "': " + value;
}
function makeMap(kind, layer, head, px) {
  const values = mapOf(kind, layer, head), n = Math.max(values.length, values[0].length);
  const m = { kind, layer, head, values, canvas: el("canvas"), over: el("canvas", "over") };
  m.cell = Math.max(2, Math.min(32, Math.floor(px / n)));
  const box = el("div", "map" + (head < 0 ? " avg" : ""));
  box.append(m.canvas, m.over);
  box.dataset.kind = kind; box.dataset.layer = layer; box.dataset.head = head;
  box.title = D.kinds[kind].title + " " + headName(layer, head) + ": click to enlarge";
  box.addEventListener("mousemove", (e) => hover(m, e));
  box.addEventListener("mouseleave", clearHover);
  drawMap(m);
  const fit = px / (n * m.cell);  // so many tokens that even 2-pixel cells pass px: shown shrunk to px
  for (const c of fit < 1 ? [m.canvas, m.over] : []) {
    c.style.width = c.width * fit + "px";
    c.style.height = c.height * fit + "px";
  }
  MAPS.push(m);
  return box;
}
function hover(m, e) {
  const r = m.canvas.getBoundingClientRect();
  const i = Math.floor((e.clientY - r.top - m.canvas.clientTop) / (m.canvas.clientHeight / m.values.length));
  const j = Math.floor((e.clientX - r.left - m.canvas.clientLeft) / (m.canvas.clientWidth / m.values[0].length));
  if (i < 0 || j < 0 || i >= m.values.length || j >= m.values[0].length) return;
  readout(cellText(m, i, j));
  const sides = D.kinds[m.kind].sides, hits = { source: -1, target: -1 };
  hits[sides[0]] = i;
  hits[sides[1]] = j;
  if (sides[0] === sides[1]) hits[sides[0]] = [i, j];
  highlight(hits);
}
function indices(h) { return Array.isArray(h) ? h : h < 0 ? [] : [h]; }
function highlight(hits) {
  for (const m of MAPS) {
    const ctx = m.over.getContext("2d"), sides = D.kinds[m.kind].sides, c = m.cell;
    ctx.clearRect(0, 0, m.over.width, m.over.height);
    ctx.strokeStyle = D.style.highlight;
    ctx.lineWidth = Math.max(1, Math.min(2, c / 3));
    for (const i of indices(hits[sides[0]])) ctx.strokeRect(0.5, i * c + 0.5, m.over.width - 1, c - 1);
    for (const j of indices(hits[sides[1]])) ctx.strokeRect(j * c + 0.5, 0.5, c - 1, m.over.height - 1);
  }
  for (const side of ["source", "target"]) {
    const on = indices(hits[side]);
    document.querySelectorAll("[data-side='" + side + "']").forEach((t) => {
      t.classList.toggle("hit", on.includes(Number(t.dataset.index)));
    });
  }
}
function readout(text) {  // the page's line, and the large view's own (the dimmed page behind it is hard to read)
  document.querySelectorAll("#readout, #large .readout").forEach((r) => { r.textContent = text; });
}
function clearHover() {
  highlight({ source: -1, target: -1 });
  readout(HINT);
}
function tokenRow(name, tokens, side, mark) {
  const row = el("div", "tokens");
  row.append(el("span", "name", name));
  tokens.forEach((t, i) => {
    const chip = el("span", "tok" + (mark ? mark(i) : ""), t);
    if (chip.classList.contains("past")) chip.title = "after the first <eos>: past the end of the answer";
    if (side) { chip.dataset.side = side; chip.dataset.index = i; }
    row.append(chip);
  });
  return row;
}
function legend(kind) {
  const k = D.kinds[kind], row = el("div", "legend"), bar = el("canvas");
  bar.width = 160; bar.height = 12;
  const ctx = bar.getContext("2d");
  for (let x = 0; x < 160; x++) {
    ctx.fillStyle = colour(k.levels[0] + (x / 159) * (k.levels[1] - k.levels[0]), k.levels[0], k.levels[1]);
    ctx.fillRect(x, 0, 1, 12);
  }
  row.append(el("span", "", fmt(k.levels[0])), bar, el("span", "", fmt(k.levels[1])));
  if (D.view !== "rollout") {  // rollout blanks nothing
    row.append(el("span", "swatch"), el("span", "", "grey = masked (the query cannot attend to that key)"));
  }
  return row;
}
function grid(kind) {
  const k = D.kinds[kind], heads = k.maps[0].length, g = el("div", "grid");
  g.style.gridTemplateColumns = "auto repeat(" + (heads + 1) + ", auto)";
  g.append(el("span", "label", ""));
  for (let h = 0; h < heads; h++) g.append(el("span", "label", "H" + (h + 1)));
  g.append(el("span", "label", "avg"));
  k.maps.forEach((_, layer) => {
    g.append(el("span", "label", "L" + (layer + 1)));
    for (let h = 0; h < heads; h++) g.append(makeMap(kind, layer, h, SMALL_PX));
    g.append(makeMap(kind, layer, -1, SMALL_PX));
  });
  g.addEventListener("click", (e) => {
    const box = e.target.closest(".map");
    if (box) openLarge(box.dataset.kind, Number(box.dataset.layer), Number(box.dataset.head));
  });
  const sec = el("section", "kind");
  sec.id = "kind-" + kind;
  sec.append(el("h2", "", k.title + " attention (query " + k.sides[0] + " x key " + k.sides[1] + ")"), legend(kind), g);
  return sec;
}
function openLarge(kind, layer, head) {
  const panel = document.querySelector("#large .panel");
  const title = D.kinds[kind].title + " " + headName(layer, head) + " (Esc or a click outside closes it)";
  panel.replaceChildren(el("h3", "", title), el("div", "readout", HINT));
  const k = D.kinds[kind];
  panel.append(tokenRow("keys (" + k.sides[1] + ")", SIDES[k.sides[1]], k.sides[1]));
  panel.append(tokenRow("queries (" + k.sides[0] + ")", SIDES[k.sides[0]], k.sides[0]));
  const box = makeMap(kind, layer, head, LARGE_PX), m = MAPS[MAPS.length - 1];
  const cell = parseFloat(m.canvas.style.width || m.canvas.width) / m.values[0].length;  // as shown on screen
  if (cell < 12) {  // too small to letter: the token rows above and the read-out name the cells
    panel.append(box);
  } else {  // each key above its column, each query beside its row
    const frame = el("div", "labelled");
    frame.append(el("span"), axis(SIDES[k.sides[1]], k.sides[1], cell, "cols"),
      axis(SIDES[k.sides[0]], k.sides[0], cell, "rows"), box);
    panel.append(frame);
  }
  document.getElementById("large").classList.add("open");
}
function axis(tokens, side, cell, cls) {
  const box = el("div", "axis " + cls);
  tokens.forEach((t, i) => {
    const label = el("span", "lab", t);
    label.style[cls === "cols" ? "width" : "height"] = cell + "px";
    label.dataset.side = side; label.dataset.index = i;
    box.append(label);
  });
  return box;
}
function closeLarge() {
  const big = document.querySelector("#large .panel .map canvas");
  const at = MAPS.findIndex((m) => m.canvas === big);
  if (at >= 0) MAPS.splice(at, 1);
  document.querySelector("#large .panel").replaceChildren();
  document.getElementById("large").classList.remove("open");
  clearHover();
}
function summary() {
  const t = el("table", "summary"), rows = Object.entries(D.model.config);
  rows.push(["parameters", D.model.parameters]);
  for (const [name, v] of Object.entries(D.model.task)) rows.push(["task." + name, v]);
  for (const [name, v] of rows) {
    const tr = el("tr");
    tr.append(el("td", "", name), el("td", "", String(v)));
    t.append(tr);
  }
  return t;
}
function build() {
  const info = D.info, f = document.getElementById("formula");
  f.append(el("b", "", info.label + ": "));
  const eq = el("span");
  eq.innerHTML = info.equation;  // the app's own rich text (sub/sup), never user input
  f.append(eq, el("div", "", info.meaning + " (" + info.scale + ")."), el("i", "", info.citation));
  const out = D.output_tokens, end = out.indexOf("<eos>");
  const mark = (i) => (end >= 0 && i > end) ? " past"  // as in the app: greyed, never judged
    : (i < D.label_tokens.length && out[i] !== D.label_tokens[i] ? " differs" : "");
  const seq = document.getElementById("sequences");
  seq.append(tokenRow("source (encoder)", D.source_tokens, "source"),
    tokenRow("target (decoder in)", D.target_tokens, "target"),
    tokenRow("model output", D.output_tokens, null, mark),
    tokenRow("expected output", D.label_tokens, null),
    el("div", "note", "Red outline: the model's output differs from the expected one. Dashed grey: written after "
      + "its first <eos>, past the end of the answer. In the grids each map's rows are queries and its columns "
      + "keys; avg is the mean of the layer's heads."));
  const kinds = document.getElementById("kinds");
  for (const kind of Object.keys(D.kinds)) kinds.append(grid(kind));
  document.getElementById("summary").append(summary());
  document.getElementById("large").addEventListener("click", (e) => { if (e.target.id === "large") closeLarge(); });
  document.addEventListener("keydown", (e) => { if (e.key === "Escape") closeLarge(); });
  clearHover();
}
build();
"""
