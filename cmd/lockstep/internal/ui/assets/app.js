// lockstep live view: plain JS, no dependencies. Data: docs/ui.md.
"use strict";
const NS = "http://www.w3.org/2000/svg";
let topo = null, state = null, pos = [];
const palette = ["#4e79a7", "#f28e2b", "#e15759", "#76b7b2", "#59a14f", "#edc948", "#b07aa1", "#ff9da7"];

function el(name, attrs, parent) {
  const e = document.createElementNS(NS, name);
  for (const k in attrs) e.setAttribute(k, attrs[k]);
  if (parent) parent.appendChild(e);
  return e;
}
function clear(svg) { while (svg.firstChild) svg.removeChild(svg.firstChild); }
function fmtTime(ns) {
  if (ns >= 1e9) return (ns / 1e9).toPrecision(4) + " s";
  if (ns >= 1e6) return (ns / 1e6).toPrecision(4) + " ms";
  if (ns >= 1e3) return (ns / 1e3).toPrecision(4) + " µs";
  return ns.toFixed(0) + " ns";
}
// Utilisation 0..1: grey to red. Occupancy: white to blue by fraction of the peak.
function utilColour(u) { const r = Math.round(200 + 55 * u), g = Math.round(200 - 170 * u), b = Math.round(200 - 170 * u); return `rgb(${r},${g},${b})`; }
function queueColour(f) { const v = Math.round(255 - 200 * f); return `rgb(${v},${v},255)`; }

function layout() {
  const tiers = {};
  topo.nodes.forEach((n, i) => { (tiers[n.tier] = tiers[n.tier] || []).push(i); });
  const levels = Object.keys(tiers).map(Number).sort((a, b) => b - a);
  pos = new Array(topo.nodes.length);
  levels.forEach((t, li) => {
    const ids = tiers[t], y = 30 + li * (300 / Math.max(1, levels.length - 1));
    ids.forEach((id, k) => { pos[id] = { x: 20 + (k + 0.5) * 960 / ids.length, y: levels.length === 1 ? 180 : y }; });
  });
}

function drawTopo(frame) {
  const svg = document.getElementById("topo");
  clear(svg);
  const g = el("g", {}, svg);
  topo.links.forEach((l, i) => {
    const u = frame ? frame.util[i] || 0 : 0;
    el("line", { x1: pos[l.a].x, y1: pos[l.a].y, x2: pos[l.b].x, y2: pos[l.b].y, stroke: utilColour(u),
      "stroke-width": 1 + 3 * u, class: "link" }, g).appendChild(document.createElementNS(NS, "title")).textContent =
      `${topo.nodes[l.a].name}–${topo.nodes[l.b].name}: ${(100 * u).toFixed(0)}%`;
  });
  let peak = 1;
  if (state) state.frames.forEach(f => f.queue.forEach(q => { if (q > peak) peak = q; }));
  const small = topo.nodes.length > 80;
  topo.nodes.forEach((n, i) => {
    const q = frame ? frame.queue[i] || 0 : 0, p = pos[i];
    let shape;
    if (n.kind === "host") shape = el("circle", { cx: p.x, cy: p.y, r: small ? 2.5 : 5, fill: "#888", class: "node host" }, g);
    else shape = el("rect", { x: p.x - (small ? 5 : 9), y: p.y - 6, width: small ? 10 : 18, height: 12, rx: 2,
      fill: queueColour(q / peak), stroke: "#334", class: "node switch" }, g);
    shape.setAttribute("data-name", n.name);
    el("title", {}, shape).textContent = n.kind === "switch" ? `${n.name}: ${q} bytes queued` : n.name;
  });
}

function axes(svg, xmin, xmax, ymin, ymax, xlabel, ylabel, logx) {
  const W = 480, H = 300, L = 50, R = 10, T = 10, B = 40;
  const sx = v => L + (W - L - R) * ((logx ? Math.log10(v) : v) - (logx ? Math.log10(xmin) : xmin)) /
    (((logx ? Math.log10(xmax) : xmax) - (logx ? Math.log10(xmin) : xmin)) || 1);
  const sy = v => H - B - (H - T - B) * (v - ymin) / ((ymax - ymin) || 1);
  el("line", { x1: L, y1: H - B, x2: W - R, y2: H - B, class: "axis" }, svg);
  el("line", { x1: L, y1: T, x2: L, y2: H - B, class: "axis" }, svg);
  for (let k = 0; k <= 4; k++) {
    const xv = logx ? Math.pow(10, Math.log10(xmin) + k * (Math.log10(xmax) - Math.log10(xmin)) / 4) : xmin + k * (xmax - xmin) / 4;
    const yv = ymin + k * (ymax - ymin) / 4;
    el("text", { x: sx(xv), y: H - B + 14, "text-anchor": "middle", class: "tick" }, svg).textContent = nice(xv);
    el("text", { x: L - 4, y: sy(yv) + 3, "text-anchor": "end", class: "tick" }, svg).textContent = nice(yv);
  }
  el("text", { x: (L + W) / 2, y: H - 6, "text-anchor": "middle", class: "lab" }, svg).textContent = xlabel;
  el("text", { x: 12, y: H / 2, transform: `rotate(-90 12 ${H / 2})`, "text-anchor": "middle", class: "lab" }, svg).textContent = ylabel;
  return { sx, sy };
}
function nice(v) {
  const a = Math.abs(v);
  if (a >= 1e9) return (v / 1e9).toPrecision(3) + "G";
  if (a >= 1e6) return (v / 1e6).toPrecision(3) + "M";
  if (a >= 1e3) return (v / 1e3).toPrecision(3) + "k";
  return a >= 10 || v === 0 ? v.toFixed(0) : v.toPrecision(2);
}

function drawCDF() {
  const svg = document.getElementById("cdf"); clear(svg);
  const xs = state.flows.map(f => f.fct_ns / 1e3).sort((a, b) => a - b);
  document.getElementById("fctcount").textContent = `${xs.length} of ${state.progress.flows} flows finished`;
  svg.setAttribute("data-count", xs.length);
  if (!xs.length) return;
  const { sx, sy } = axes(svg, xs[0], Math.max(xs[xs.length - 1], xs[0] * 1.01 + 1e-9), 0, 1, "FCT (µs)", "fraction", false);
  let d = `M${sx(xs[0])},${sy(0)}`;
  xs.forEach((x, i) => { d += `H${sx(x)}V${sy((i + 1) / xs.length)}`; });
  el("path", { d, fill: "none", stroke: palette[0], "stroke-width": 1.5 }, svg);
}

function drawSlowdown() {
  const svg = document.getElementById("slow"); clear(svg);
  const fs = state.flows.filter(f => f.slowdown > 0 && f.size > 0);
  if (!fs.length) return;
  let smin = Infinity, smax = 0, ymax = 1;
  fs.forEach(f => { smin = Math.min(smin, f.size); smax = Math.max(smax, f.size); ymax = Math.max(ymax, f.slowdown); });
  if (smin === smax) { smin /= 2; smax *= 2; }
  const { sx, sy } = axes(svg, smin, smax, 0, ymax * 1.05, "flow size (bytes)", "slowdown", true);
  fs.forEach(f => el("circle", { cx: sx(f.size), cy: sy(f.slowdown), r: 2, fill: palette[0], "fill-opacity": 0.6 }, svg));
}

function drawCwnd() {
  const svg = document.getElementById("cwnd"); clear(svg);
  const pts = state.cwnd;
  if (!pts.length) { el("text", { x: 240, y: 150, "text-anchor": "middle", class: "lab" }, svg).textContent = "no cwnd trace (run with --cwnd)"; return; }
  let tmax = 0, cmax = 0;
  pts.forEach(p => { tmax = Math.max(tmax, p.t_ns); cmax = Math.max(cmax, p.cwnd); });
  const { sx, sy } = axes(svg, 0, tmax || 1, 0, cmax * 1.05, "virtual time (ns)", "cwnd (bytes)", false);
  const by = {};
  pts.forEach(p => { (by[p.flow] = by[p.flow] || []).push(p); });
  Object.keys(by).forEach((k, i) => {
    let d = "";
    by[k].forEach((p, j) => { d += (j ? "L" : "M") + sx(p.t_ns) + "," + sy(p.cwnd); });
    el("path", { d, fill: "none", stroke: palette[i % palette.length], "stroke-width": 1 }, svg);
  });
}

function drawAll() {
  if (!topo || !state) return;
  const p = state.progress, slider = document.getElementById("time");
  slider.max = Math.max(0, state.frames.length - 1);
  if (document.getElementById("follow").checked) slider.value = slider.max;
  const f = state.frames[Number(slider.value)];
  document.getElementById("tlabel").textContent = f ? "virtual " + fmtTime(f.t_ns) : "";
  drawTopo(f); drawCDF(); drawSlowdown(); drawCwnd();
  document.getElementById("bar").style.width = (p.limit_ns ? 100 * Math.min(1, p.finished ? 1 : p.now_ns / p.limit_ns) : 0) + "%";
  document.getElementById("status").textContent = `${p.finished ? "finished" : "running"} · virtual ${fmtTime(p.now_ns)} · ` +
    `${p.events} events · ${(p.events_per_second / 1e6).toFixed(2)}M ev/s · flows ${p.flows_done}/${p.flows}`;
}

async function refresh() {
  const r = await fetch("api/state");
  state = await r.json();
  drawAll();
}

async function main() {
  topo = await (await fetch("api/topology")).json();
  document.getElementById("title").textContent = "lockstep · " + (topo.name || "run");
  document.getElementById("topo").setAttribute("data-nodes", topo.nodes.length);
  layout();
  await refresh();
  document.getElementById("time").addEventListener("input", () => { document.getElementById("follow").checked = false; drawAll(); });
  document.getElementById("follow").addEventListener("change", drawAll);
  if (state.progress.finished) return;
  const es = new EventSource("api/events");
  let busy = false;
  es.addEventListener("progress", async ev => {
    const p = JSON.parse(ev.data);
    if (busy) return;
    busy = true;
    try { await refresh(); } finally { busy = false; }
    if (p.finished) { es.close(); await refresh(); }
  });
}
main();
