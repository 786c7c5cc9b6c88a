// psuite report page: draws the view embedded in #psuite-view (its schema:
// psuite/psprocess/html/__init__.py).  Plain JavaScript, no network, no
// library: the charts are the page's own SVG.
//
// CUBE's display (user guide 1.5): metric tree | call tree | system tree,
// selection flowing left to right; a collapsed node shows its inclusive
// value, an expanded one its exclusive value.  As in CUBE: value modes per
// pane (percentages of roots and selections, peers, external), Ctrl+click
// selections summed into the next pane, find, arrow keys, a context menu
// (expand, hide, cut, sort, info) and a flat profile beside the call tree.
// Trees are built lazily (a node's children only when it is expanded) and
// values are computed once per metric in typed arrays, so 64 ranks x 2,000
// functions opens fast.
"use strict";
(function () {
  const V = JSON.parse(document.getElementById("psuite-view").textContent);
  const NC = V.cnodes.region.length;
  const NL = V.locations.length;
  const DIFF = !!V.difference;

  // ---- small DOM helpers -------------------------------------------------
  function el(tag, attrs, ...kids) {
    const e = document.createElement(tag);
    if (attrs) for (const k in attrs) {
      if (k === "class") e.className = attrs[k];
      else if (k === "text") e.textContent = attrs[k];
      else if (k.startsWith("on")) e.addEventListener(k.slice(2), attrs[k]);
      else e.setAttribute(k, attrs[k]);
    }
    for (const k of kids) if (k != null) e.append(k);
    return e;
  }

  function fmt(v, integer) {
    if (v === null || Number.isNaN(v)) return "-";
    if (!Number.isFinite(v)) return String(v);
    if (Number.isInteger(v) && Math.abs(v) < 1e15) return v.toLocaleString("en-US");
    const a = Math.abs(v);
    if (integer && a >= 1) return Math.round(v).toLocaleString("en-US");
    if (a !== 0 && (a >= 1e6 || a < 1e-3)) return v.toExponential(3);
    return v.toLocaleString("en-US", {maximumSignificantDigits: 5});
  }
  const pct = (v) => (Number.isFinite(v) ? v.toFixed(2) + " %" : "-");

  // ---- the call tree's structure: children lists (CSR), roots ------------
  const parent = Int32Array.from(V.cnodes.parent);
  const regionOf = Int32Array.from(V.cnodes.region);
  const childCount = new Int32Array(NC);
  const roots = [];
  for (let c = 0; c < NC; c++) {
    if (parent[c] < 0) roots.push(c); else childCount[parent[c]]++;
  }
  const childStart = new Int32Array(NC + 1);
  for (let c = 0; c < NC; c++) childStart[c + 1] = childStart[c] + childCount[c];
  const childList = new Int32Array(Math.max(NC - roots.length, 0));
  const fill = childStart.slice(0, NC);
  for (let c = 0; c < NC; c++) if (parent[c] >= 0) childList[fill[parent[c]]++] = c;
  const cnodeKids = (c) => Array.from(childList.subarray(childStart[c], childStart[c + 1]));

  // ---- values: decoded from the view lazily, one metric when first needed --
  // The view stores a metric's cells (cnode x location, row-major) sparse (its schema: __init__.py):
  // the positions of the non-zero cells as gaps, their values as varints, float32 or float64, all
  // base64; the cells that hold no number apart.  A hand-written view may give a plain list instead.
  // Decoded here into {n, at: positions, val: values, nul: positions of no number}, never wider.
  function bytesOf(b64) {
    const s = atob(b64 || ""), b = new Uint8Array(s.length);
    for (let i = 0; i < s.length; i++) b[i] = s.charCodeAt(i);
    return b;
  }
  // LEB128 varints (exact up to 2^53: multiplication, not 32-bit shifts)
  function varints(b) {
    const out = [];
    for (let p = 0; p < b.length;) {
      let v = 0, mul = 1, x;
      do { x = b[p++]; v += (x & 127) * mul; mul *= 128; } while (x & 128);
      out.push(v);
    }
    return out;
  }
  const positions = (b64) => {
    const gaps = varints(bytesOf(b64)), at = new Uint32Array(gaps.length);
    let p = -1;
    for (let i = 0; i < gaps.length; i++) at[i] = p += gaps[i] + 1;
    return at;
  };
  function floats(x) {
    if (Array.isArray(x)) { // a plain list: its non-zero cells and its nulls
      const at = [], val = [], nul = [];
      x.forEach((v, i) => { if (v === null) nul.push(i); else if (v !== 0) { at.push(i); val.push(v); } });
      return {n: x.length, at: Uint32Array.from(at), val: Float64Array.from(val), nul: Uint32Array.from(nul)};
    }
    const at = positions(x.at);
    let val;
    if (x.int != null) val = Float64Array.from(varints(bytesOf(x.int)), (z) => (z % 2 ? -(z + 1) / 2 : z / 2)); // zigzag
    else if (x.f32 != null) val = Float64Array.from(new Float32Array(bytesOf(x.f32).buffer));
    else val = new Float64Array(bytesOf(x.f64).buffer);
    return {n: x.n, at, val, nul: positions(x.null)};
  }
  // the dense cells (NaN: no number), made only when a pane needs every cell of a metric
  function dense(sp) {
    const a = new Float64Array(sp.n);
    for (let i = 0; i < sp.at.length; i++) a[sp.at[i]] = sp.val[i];
    for (const i of sp.nul) a[i] = NaN;
    return a;
  }
  // Per call node over its locations, from the sparse cells: [sums, counts of numbers, max, min]
  // (a row's zero cells count as values: in the mean, the max and the min)
  function rowStats(sp) {
    const sum = new Float64Array(NC), nums = new Float64Array(NC).fill(NL), nz = new Float64Array(NC);
    const mx = new Float64Array(NC).fill(-Infinity), mn = new Float64Array(NC).fill(Infinity);
    for (let i = 0; i < sp.at.length; i++) {
      const c = Math.floor(sp.at[i] / NL), v = sp.val[i];
      sum[c] += v; nz[c]++;
      if (v > mx[c]) mx[c] = v;
      if (v < mn[c]) mn[c] = v;
    }
    for (const i of sp.nul) nums[Math.floor(i / NL)]--;
    for (let c = 0; c < NC; c++) if (nz[c] < nums[c]) { mx[c] = Math.max(mx[c], 0); mn[c] = Math.min(mn[c], 0); }
    return {sum, nums, mx, mn};
  }
  const statOver = (st, c, over) => (st.nums[c] === 0 ? NaN : over === "sum" ? st.sum[c]
    : over === "mean" ? st.sum[c] / st.nums[c] : over === "max" ? st.mx[c] : st.mn[c]);

  // ---- metrics: values per (cnode, location) in typed arrays -------------
  const metrics = V.metrics.map((m, i) => {
    // ratios and least/greatest values do not add up over cnodes or ranks
    const summable = !m.derived && !!V.values[m.name] && V.values[m.name].inclusive == null;
    // over locations: the view says (a wall clock: the longest), else summed where values add up
    const over = ["sum", "mean", "max", "min"].includes(m.over) ? m.over : summable ? "sum" : "mean";
    return {...m, index: i, kids: [], summable, over};
  });
  const metricRoots = [];
  metrics.forEach((m) => (m.parent == null ? metricRoots : metrics[m.parent].kids).push(m.index));

  // Over locations (or roots): the sum, mean, greatest or least of the values (NaN left out).
  function aggregate(arr, base, n, over) {
    let s = 0, k = 0, mx = -Infinity, mn = Infinity;
    for (let i = 0; i < n; i++) {
      const v = arr[base + i];
      if (v === v) { s += v; k++; if (v > mx) mx = v; if (v < mn) mn = v; }
    }
    if (k === 0) return NaN;
    return over === "sum" ? s : over === "max" ? mx : over === "min" ? mn : s / k;
  }
  const overLabel = (m) => (NL === 1 || m.over === "sum" ? "" : " [" + m.over + "]");

  // Summed up the tree, per location: a cell with no number adds nothing; a leaf's stays without one.
  function treeSum(exc) {
    const inc = new Float64Array(NC * NL);
    for (let j = 0; j < inc.length; j++) inc[j] = exc[j] === exc[j] ? exc[j] : 0;
    for (let c = NC - 1; c >= 0; c--) { // parents come first, so walk back
      const p = parent[c];
      if (p < 0) continue;
      const cb = c * NL, pb = p * NL;
      for (let l = 0; l < NL; l++) inc[pb + l] += inc[cb + l];
    }
    for (let c = 0; c < NC; c++) {
      if (childCount[c] !== 0) continue;
      for (let l = 0; l < NL; l++) if (exc[c * NL + l] !== exc[c * NL + l]) inc[c * NL + l] = NaN;
    }
    return inc;
  }

  // Every cell of a metric (exc, inc: NC x NL float64 each) is made only when a pane reads it, and kept
  // for the last DENSE_KEPT metrics alone: 1,024 ranks x 10,000 call paths are 160 MB a metric.
  const DENSE_KEPT = 2, denseKept = [];
  function lazyCells(d, makeExc, makeInc) {
    let exc = null, inc = null;
    const keep = () => {
      if (!denseKept.includes(d)) denseKept.push(d);
      while (denseKept.length > DENSE_KEPT) denseKept.shift().drop();
    };
    Object.defineProperty(d, "exc", {get: () => { if (!exc) { exc = makeExc(); keep(); } return exc; }});
    Object.defineProperty(d, "inc", {get: () => { if (!inc) { inc = makeInc(); keep(); } return inc; }});
    d.drop = () => { exc = inc = null; };
  }

  const dataCache = new Map();
  // {exc, inc: Float64Array(NC*NL) (made when read); excT, incT: Float64Array(NC) over all locations;
  // sp: a single metric's sparse exclusive cells}: the metrics ids summed, less the metrics in `less`
  // (an expanded metric's own share)
  function metricData(ids, less = []) {
    const key = ids.join(",") + "-" + less.join(",");
    let d = dataCache.get(key);
    if (d) return d;
    const summable = ids.every((i) => metrics[i].summable);
    const over = ids.length === 1 && less.length === 0 ? metrics[ids[0]].over : summable ? "sum" : "mean";
    d = {summable, over};
    if (ids.length === 1 && less.length === 0) {
      const vals = V.values[metrics[ids[0]].name];
      const sp = vals ? floats(vals.exclusive)
        : {n: NC * NL, at: new Uint32Array(0), val: new Float64Array(0), nul: Uint32Array.from({length: NC * NL}, (_, i) => i)};
      const incSp = vals && vals.inclusive != null ? floats(vals.inclusive) : null;
      d.sp = sp;
      const es = rowStats(sp);
      d.excT = Float64Array.from({length: NC}, (_, c) => statOver(es, c, over));
      if (incSp) {
        const is = rowStats(incSp);
        d.incT = Float64Array.from({length: NC}, (_, c) => statOver(is, c, over));
      } else if (over === "sum" || over === "mean") {
        // inclusive sums over locations are exclusive sums added up the tree: no cell needed
        const s = es.sum.slice(), nums = new Float64Array(NC).fill(NL);
        for (let c = NC - 1; c >= 0; c--) if (parent[c] >= 0) s[parent[c]] += s[c];
        for (let c = 0; c < NC; c++) if (childCount[c] === 0) nums[c] = es.nums[c];
        d.incT = Float64Array.from({length: NC}, (_, c) => (nums[c] === 0 ? NaN : over === "sum" ? s[c] : s[c] / nums[c]));
      }
      lazyCells(d, () => dense(sp), () => (incSp ? dense(incSp) : treeSum(d.exc)));
    } else {
      lazyCells(d, () => {
        const exc = new Float64Array(NC * NL);
        for (const i of ids) {
          const e = metricData([i]).exc;
          for (let j = 0; j < exc.length; j++) if (e[j] === e[j]) exc[j] += e[j];
        }
        for (const i of less) {
          const e = metricData([i]).exc;
          for (let j = 0; j < exc.length; j++) if (e[j] === e[j]) exc[j] -= e[j];
        }
        return exc;
      }, () => treeSum(d.exc));
    }
    if (!d.excT) d.excT = Float64Array.from({length: NC}, (_, c) => aggregate(d.exc, c * NL, NL, over));
    if (!d.incT) d.incT = Float64Array.from({length: NC}, (_, c) => aggregate(d.inc, c * NL, NL, over));
    dataCache.set(key, d);
    return d;
  }

  const SECONDS = ["sec", "s", "second", "seconds"];
  // "Time (sec)"; names that say their unit already ("CPU time (seconds)") as they are
  const withUnit = (m) => (m.unit && m.unit !== "occ" && !m.display.includes("(") && !/ per second$/.test(m.display)
    ? m.display + " (" + m.unit + ")" : m.display);

  // What a metric's node stands for, as CUBE defines the metric tree (user guide 2.1.1.5: a stored value
  // includes its child metrics'): collapsed, the metric as stored; expanded, the stored value less its
  // summable children's (its own share). [ids added, ids subtracted]
  function metricShare(i, open) {
    if (!open || !metrics[i].summable) return [[i], []];
    return [[i], metrics[i].kids.filter((k) => metrics[k].summable)];
  }

  // The metric tree's value of a metric: over every root cnode and location.
  function metricTotal([ids, less]) {
    const d = metricData(ids, less);
    return aggregate(Float64Array.from(roots, (r) => d.incT[r]), 0, roots.length, d.over);
  }

  // ---- the system tree: machine > node > rank > thread -------------------
  // As CUBE shows it (user guide 1.5.2.4): the thread level of a run whose ranks have one thread each is
  // hidden (the rank is the leaf), and a machine named as its only node (a single host) is not shown
  // twice: the node level is left out.
  const sysNodes = []; // {id, kind, name, kids: [ids], locs: [location indices], loc?: a leaf's location}
  (function buildSystem() {
    const byKey = new Map();
    function node(key, kind, name, parentNode) {
      let n = byKey.get(key);
      if (!n) {
        n = {id: sysNodes.length, kind, name, kids: [], locs: [], up: parentNode ? parentNode.id : -1};
        sysNodes.push(n); byKey.set(key, n);
        if (parentNode) parentNode.kids.push(n.id);
      }
      return n;
    }
    const rankKey = (loc) => loc.machine + "\0" + loc.node + "\0" + loc.rank;
    const perRank = new Map(), nodesOf = new Map();
    for (const loc of V.locations) {
      perRank.set(rankKey(loc), (perRank.get(rankKey(loc)) || 0) + 1);
      if (!nodesOf.has(loc.machine)) nodesOf.set(loc.machine, new Set());
      nodesOf.get(loc.machine).add(loc.node);
    }
    const threads = [...perRank.values()].some((n) => n > 1);
    const sameName = (loc) => nodesOf.get(loc.machine).size === 1 && (loc.node || "") === (loc.machine || "");
    V.locations.forEach((loc, l) => {
      const m = node("m\0" + loc.machine, "machine", loc.machine || "machine", null);
      const h = sameName(loc) ? m : node("n\0" + loc.machine + "\0" + loc.node, "node", loc.node || "node", m);
      const r = node("r\0" + rankKey(loc), "rank", "rank " + loc.rank, h);
      r.rank = loc.rank;
      const t = threads ? node("t\0" + l, "thread", loc.label || "thread " + loc.thread, r) : r;
      t.loc = l;
      for (const n of new Set([m, h, r, t])) n.locs.push(l);
    });
  })();
  const sysRoots = sysNodes.filter((n) => n.kind === "machine").map((n) => n.id);
  const sysDepth = (id) => { let k = 0; for (let n = sysNodes[id].up; n >= 0; n = sysNodes[n].up) k++; return k; };

  // ---- state -------------------------------------------------------------
  // Each tree has a selection (several nodes with Ctrl+click, as in CUBE) and its latest node, the one
  // the source view and the info line follow.
  const S = {
    metric: metricRoots.length ? metricRoots[0] : -1,
    cnode: roots.length ? roots[0] : -1,
    sys: sysRoots.length ? sysRoots[0] : -1,
    region: -1, // the flat view's latest selected region
    sel: {metric: [], call: [], flat: [], system: []},
    modes: {metric: "abs", call: "abs", system: "abs"},
    callView: "tree", // or "flat": the call pane's per-function view
  };
  S.sel.metric = S.metric >= 0 ? [S.metric] : [];
  S.sel.system = S.sys >= 0 ? [S.sys] : [];

  // ---- colours: CUBE's blue > cyan > green > yellow > red; differences
  // green (less: a gain) and red (more: a loss) ----------------------------
  const STOPS = [[0, 0, 255], [0, 255, 255], [0, 255, 0], [255, 255, 0], [255, 0, 0]];
  // The colour scale's settings, as CUBE's (user guide 1.6.4.2 "General coloring", 1.5.2.5 "Min/max
  // values"): a user range [min, max] for the ends of the scale (values outside it grey), a threshold
  // (% of the scale) below which values are white, and one below which colours are lightened, the more
  // the nearer the scale's low end.  null: not set.  Not for the metric tree (as CUBE's min/max values).
  const SCALE = {min: null, max: null, white: null, light: null};
  const NO_SCALE = {min: null, max: null, white: null, light: null};
  const userRange = (sc = SCALE) => sc.min !== null && sc.max !== null && sc.max > sc.min;
  // pane: the tree coloured ("metric": the scale's settings left out)
  function colour(v, max, pane) {
    if (!(v === v)) return "#ddd";
    const sc = pane === "metric" ? NO_SCALE : SCALE;
    if (DIFF) {
      if (!(max > 0)) return "#ddd";
      const f = Math.min(Math.abs(v) / max, 1);
      if (v === 0) return "#fff";
      const g = Math.round(235 - 175 * f);
      return v < 0 ? `rgb(${g - 20},${Math.round(200 - 60 * f) + 30},${g - 20})` : `rgb(230,${g - 40},${g - 40})`;
    }
    let f;
    if (userRange(sc)) {
      const a = Math.abs(v);
      if (a < sc.min || a > sc.max) return "rgb(160,160,160)"; // outside the user's range: grey, as CUBE
      f = (a - sc.min) / (sc.max - sc.min);
    } else {
      if (!(max > 0)) return "#ddd";
      f = Math.min(Math.abs(v) / max, 1);
    }
    if (sc.white !== null && f * 100 < sc.white) return "rgb(255,255,255)";
    let c = ramp(f);
    if (sc.light !== null && f * 100 < sc.light) {
      const w = 1 - f * 100 / sc.light; // 1 at the scale's low end, 0 at the threshold
      c = c.map((x) => Math.round(x + (255 - x) * w));
    }
    return rgb(c);
  }
  // a colour square's colour from where its value lies on the scale (Tree.place): light grey undefined,
  // grey outside the user's range, white below the white threshold, lightened below the lightening one
  // (SCALE: not in the metric tree), else the scale's colour; sign: a difference's gain (-1) or loss
  function paint(sign, place, pane) {
    if (place === null) return "rgb(160,160,160)";
    if (!(place === place)) return "#ddd";
    const sc = pane === "metric" ? NO_SCALE : SCALE;
    if (sc.white !== null && place * 100 < sc.white) return "rgb(255,255,255)";
    if (DIFF) return colour(sign * place, 1, "metric");
    let c = ramp(place);
    if (sc.light !== null && place * 100 < sc.light) {
      const w = 1 - place * 100 / sc.light; // 1 at the scale's low end, 0 at the threshold
      c = c.map((x) => Math.round(x + (255 - x) * w));
    }
    return rgb(c);
  }
  const sumOf = (list) => { let s = 0, k = 0; for (const v of list) if (v === v) { s += v; k++; } return k ? s : NaN; };
  const unitOf = (i) => (i >= 0 && metrics[i].unit && metrics[i].unit !== "occ" ? metrics[i].unit : "");

  // ---- a lazy tree widget ------------------------------------------------
  const CHUNK = 400; // children laid out at once; a "... N more" row gives the rest
  // spec: {pane, roots, kids(id) (every child; the tree leaves its hidden ones out), up(id) (the parent: null
  // or -1 for a root), label(id), attrs(id), raw(id, open), rootOf(id) (own root percent), max() (the colour
  // scale's end; without it each node's root's value), peers(id, cache) (system tree), integer(id),
  // sort(ids), sortBy, all() (every node, for find), info(id) (the context menu's Info), onSelect(id, add),
  // onToggle(id or null: all), selected() (the latest selected), selection() (every selected node)}
  class Tree {
    constructor(spec) {
      this.s = spec;
      this.open = new Set(spec.initiallyOpen || []);
      this.rows = new Map();
      this.sortBy = spec.sortBy || "given"; // "value", "name" or the tree's own order
      this.found = null; // find: {ids: [...], set, inside: Set of ancestors, at: index of the current}
      this.hidden = new Set(); // nodes hidden (context menu), with the pruned ones (cut off for good)
      this.pruned = new Set();
      this.box = el("div", {class: "tree", "data-tree": spec.pane, tabindex: "0"});
      this.box.addEventListener("click", (ev) => this.click(ev));
      this.box.addEventListener("keydown", (ev) => this.key(ev));
      this.box.addEventListener("contextmenu", (ev) => {
        const r = ev.target.closest(".row");
        ev.preventDefault();
        contextMenu(this, r ? this.s.key(r.dataset.id) : null, ev.clientX, ev.clientY);
      });
    }
    render() {
      this.rows.clear();
      this.box.textContent = "";
      this.appendKids(this.box, this.sorted(this.s.roots.filter((r) => !this.hidden.has(r))), 0, 0); // a flat view: many
      this.update();
    }
    kidsOf(id) { return this.hidden.size ? this.s.kids(id).filter((k) => !this.hidden.has(k)) : this.s.kids(id); }
    sorted(ids) {
      if (this.sortBy === "name") return ids.slice().sort((a, b) => this.s.label(a).localeCompare(this.s.label(b)));
      if (this.sortBy === "value") {
        const v = (id) => { const x = Math.abs(this.s.raw(id, false)); return x === x ? x : -1; };
        return ids.slice().sort((a, b) => v(b) - v(a));
      }
      return this.s.sort ? this.s.sort(ids) : ids;
    }
    row(id, level) {
      const hasKids = this.kidsOf(id).length > 0;
      const isOpen = hasKids && this.open.has(id);
      const r = el("div", {class: "row", ...this.s.attrs(id)});
      r.dataset.id = id;
      r.style.paddingLeft = (level * 14 + 2) + "px";
      r.dataset.level = level;
      r.append(el("span", {class: "tog", text: hasKids ? (isOpen ? "[-]" : "[+]") : ""}),
        el("span", {class: "sq"}), el("span", {class: "val"}), el("span", {class: "name", text: this.s.label(id)}));
      r.dataset.open = isOpen ? "1" : "0";
      this.rows.set(id, r);
      const wrap = el("div", {class: "node"}, r);
      if (isOpen) wrap.append(this.kidsBox(id, level + 1));
      return wrap;
    }
    kidsBox(id, level) {
      const box = el("div", {class: "kids"});
      this.appendKids(box, this.sorted(this.kidsOf(id)), 0, level);
      return box;
    }
    // children CHUNK at a time (the largest first): a flat profile's 2,000
    // functions need not all be laid out before the page answers
    appendKids(box, kids, from, level) {
      const end = Math.min(kids.length, from + CHUNK);
      for (let i = from; i < end; i++) box.append(this.row(kids[i], level));
      if (end < kids.length) {
        const more = el("div", {class: "more", "data-more": String(kids.length - end),
          text: "... " + (kids.length - end).toLocaleString("en-US") + " more"});
        more.style.paddingLeft = (level * 14 + 30) + "px";
        more.addEventListener("click", (ev) => {
          ev.stopPropagation();
          more.remove();
          this.appendKids(box, kids, end, level);
          this.update();
        });
        box.append(more);
      }
    }
    toggle(id) {
      const r = this.rows.get(id);
      if (!r) return;
      const wrap = r.parentNode;
      const level = +r.dataset.level;
      if (this.open.has(id)) {
        this.open.delete(id);
        if (wrap.children[1]) {
          for (const rr of wrap.children[1].querySelectorAll(".row")) this.rows.delete(this.s.key(rr.dataset.id));
          wrap.children[1].remove();
        }
        r.dataset.open = "0";
        r.firstChild.textContent = "[+]";
      } else {
        this.open.add(id);
        wrap.append(this.kidsBox(id, level + 1));
        r.dataset.open = "1";
        r.firstChild.textContent = "[-]";
      }
    }
    // expand or collapse a node as a click on its [+]/[-] does
    flip(id) {
      const sel = this.s.selected();
      this.toggle(id);
      // as CUBE does: collapsing an ancestor of the selected node moves the selection to it (the
      // selected node is hidden now; its values must not stay what the other panes show)
      if (!this.open.has(id) && sel != null && sel !== id && this.below(sel, id)) this.s.onSelect(id, false);
      this.s.onToggle(id);
    }
    click(ev) {
      const r = ev.target.closest(".row");
      if (!r) return;
      const id = this.s.key(r.dataset.id);
      if (ev.target.classList.contains("tog") && ev.target.textContent) this.flip(id);
      else this.s.onSelect(id, ev.ctrlKey || ev.metaKey); // Ctrl+click: one more (or one less) selected
    }
    // CUBE's keys: up/down move the selection to the row above/below, right expands, left collapses
    // (or, on a collapsed node or a leaf, goes to the parent)
    key(ev) {
      const sel = this.s.selected();
      if (!["ArrowUp", "ArrowDown", "ArrowLeft", "ArrowRight"].includes(ev.key) || sel == null || sel < 0) return;
      ev.preventDefault();
      if (ev.key === "ArrowUp" || ev.key === "ArrowDown") {
        const rows = Array.from(this.box.querySelectorAll(".row"));
        const i = rows.indexOf(this.rows.get(sel)) + (ev.key === "ArrowDown" ? 1 : -1);
        if (i >= 0 && i < rows.length) this.s.onSelect(this.s.key(rows[i].dataset.id), false);
      } else if (ev.key === "ArrowRight") {
        if (this.kidsOf(sel).length && !this.open.has(sel)) this.flip(sel);
      } else if (this.isOpen(sel)) {
        this.flip(sel);
      } else {
        const up = this.s.up(sel);
        if (up != null && up >= 0 && this.rows.has(up)) this.s.onSelect(up, false);
      }
      const r = this.rows.get(this.s.selected());
      if (r) r.scrollIntoView({block: "nearest"});
    }
    isOpen(id) { return this.open.has(id) && this.kidsOf(id).length > 0; }
    // whether node id lies in the subtree of node top
    below(id, top) {
      for (let n = id; n != null && n >= 0; n = this.s.up(n)) if (n === top) return true;
      return false;
    }
    // open every ancestor of a node and lay its row out (past "... N more" rows too)
    reveal(id) {
      const path = [];
      for (let n = this.s.up(id); n != null && n >= 0; n = this.s.up(n)) path.push(n);
      if (path.some((n) => !this.open.has(n))) { for (const n of path) this.open.add(n); this.render(); }
      for (let guard = 0; !this.rows.has(id) && guard < 1000; guard++) {
        const up = this.s.up(id);
        const box = up != null && up >= 0 && this.rows.has(up) ? this.rows.get(up).parentNode : this.box;
        const more = box.querySelector(":scope > .kids > .more, :scope > .more");
        if (!more) break;
        more.click();
      }
      const r = this.rows.get(id);
      if (r) r.scrollIntoView({block: "nearest"});
    }
    // a row's absolute value: inclusive collapsed, exclusive expanded, where an expanded node's value holds
    // its hidden children's inclusive values (CUBE's hiding)
    shown(id) {
      if (!this.isOpen(id)) return this.s.raw(id, false);
      const own = this.s.raw(id, true), gone = this.hiddenValue(id);
      return gone === gone ? sumOf([own, gone]) : own;
    }
    // an open node's hidden children's inclusive values summed (NaN: none hidden)
    hiddenValue(id) {
      if (!this.hidden.size) return NaN;
      return sumOf(this.s.kids(id).filter((k) => this.hidden.has(k)).map((k) => this.s.raw(k, false)));
    }
    // the absolute value a row's mode starts from: peer modes compare inclusive values
    base(id) {
      if (!["peer", "peerdist"].includes(S.modes[this.s.pane])) return this.shown(id);
      // an expanded grouping node stays undefined in every mode (user guide 1.5.2.2)
      const own = this.isOpen(id) ? this.s.raw(id, true) : 0;
      return own === own ? this.s.raw(id, false) : NaN;
    }
    // the displayed value of a row under the pane's value mode (CUBE's value modes, user guide 1.5.2.2)
    display(id) {
      const v = this.base(id);
      const mode = S.modes[this.s.pane];
      if (mode === "abs") return v;
      if (mode === "peer" || mode === "peerdist") {
        const [mn, mx] = this.s.peers(id, this.cache || new Map());
        if (mode === "peer") return mx ? v / mx * 100 : NaN;
        return mx > mn ? (v - mn) / (mx - mn) * 100 : v === v ? 100 : NaN;
      }
      const t = this.reference(id, mode);
      return t ? v / t * 100 : NaN;
    }
    // 100 % of a percent mode: own root (each node's root, collapsed), this tree's selection, or the
    // selection or root of a pane to the left (refs: metric/call root/selection)
    reference(id, mode) {
      if (mode === "root") {
        if (this.s.rootOf) return this.s.raw(this.s.rootOf(id), false);
        return NaN;
      }
      if (mode === "sel") {
        const sel = this.s.selection();
        // a share only of something of the same kind (the metric tree: the same tree and unit)
        if (!sel.length || (this.s.comparable && !sel.every((s) => this.s.comparable(id, s)))) return NaN;
        return sumOf(sel.map((s) => this.shown(s)));
      }
      if (mode === "ext" && this.s.rootOf && this.s.pane === "metric") return externalTotal(this.s.rootOf(id));
      return REFS[mode] ? REFS[mode]() : NaN;
    }
    // a new selection: only the marks move, unless values are relative to it
    reselect() {
      if (S.modes[this.s.pane] === "sel") { this.update(); return; }
      const sel = new Set(this.s.selection());
      for (const [id, r] of this.rows) r.classList.toggle("sel", sel.has(id));
      if (this.info) this.info();
    }
    update() {
      const mode = S.modes[this.s.pane];
      this.cache = new Map(); // what every row of one update shares (peers' least and greatest values)
      // the colour scale's ends: 0 and the tree's largest value (absolute mode; the metric tree's
      // metrics of different units each against their own root), 0 and 100 % otherwise
      const max = mode !== "abs" ? 100 : this.s.max ? this.s.max() : null;
      this.scale = (id) => (max !== null ? max : Math.abs(this.s.raw(this.s.rootOf(id), false)));
      const sel = new Set(this.s.selection());
      const f = this.found;
      for (const [id, r] of this.rows) {
        const base = this.base(id);
        const v = this.display(id);
        r.dataset.value = Number.isFinite(v) ? String(v) : "";
        r.children[2].textContent = mode === "abs" ? fmt(v, this.s.integer(id)) : pct(v);
        // CUBE: the hidden children's share of an open node's value, in brackets
        const gone = this.isOpen(id) ? this.hiddenValue(id) : NaN;
        if (gone === gone && base) r.children[2].textContent += " (" + pct(gone / base * 100) + " hidden)";
        // as CUBE colours (user guide 1.5.2.4): a value's place between 0 and the largest value in the
        // tree in the absolute mode (the root's, where values add up), between 0 and 100 in the percent
        // modes.  A difference's colour says gain or loss whatever the mode: the sign is the absolute
        // value's (a share of a negative root is positive for a gain), the depth the mode's value's
        const sq = r.children[1];
        sq.style.background = paint(DIFF && base === base ? Math.sign(base) : 1, this.place(id, mode === "abs" ? base : v),
          this.s.pane);
        if (DIFF) {
          sq.classList.toggle("gain", base < 0);
          sq.classList.toggle("loss", base > 0);
        }
        r.classList.toggle("sel", sel.has(id));
        r.classList.toggle("found", !!f && f.set.has(id));
        r.classList.toggle("found-in", !!f && !this.isOpen(id) && f.inside.has(id) && !f.set.has(id));
        r.classList.toggle("found-cur", !!f && f.ids[f.at] === id);
      }
      if (this.info) this.info();
    }
    // where a value lies on the colour scale, 0 to 1: between 0 and the scale's end, or in the user's range
    // (CUBE's "Min/max values"); null outside that range, NaN undefined
    place(id, v) {
      if (!(v === v)) return NaN;
      const [lo, hi] = this.ends(id);
      const user = this.userEnds();
      const a = this.range ? v : Math.abs(v);
      if (user && (a < lo || a > hi)) return null;
      return hi > lo ? Math.min((a - lo) / (hi - lo), 1) : NaN;
    }
    // the tree's own range (its context menu), else the page's (the header's min and max; not the metric
    // tree's, as CUBE's), else null
    userEnds() { return this.range || (this.s.pane !== "metric" && userRange() ? [SCALE.min, SCALE.max] : null); }
    ends(id) { return this.userEnds() || [0, this.scale(id)]; }
    // CUBE's find items / find next: every node whose label holds the text (a regular expression where it
    // is one) is marked, collapsed nodes above a match lightly; the current match is revealed
    find(text) {
      this.found = null;
      if (text) {
        let re;
        try { re = new RegExp(text, "i"); } catch (e) { re = null; }
        const hit = (id) => (re ? re.test(this.s.label(id)) : this.s.label(id).toLowerCase().includes(text.toLowerCase()));
        const ids = this.s.all().filter(hit);
        const inside = new Set();
        for (const id of ids) for (let n = this.s.up(id); n != null && n >= 0 && !inside.has(n); n = this.s.up(n)) inside.add(n);
        this.found = {ids, set: new Set(ids), inside, at: 0};
        if (ids.length) this.reveal(ids[0]);
      }
      this.update();
      return this.found ? this.found.ids.length : 0;
    }
    findNext() {
      const f = this.found;
      if (!f || !f.ids.length) return;
      f.at = (f.at + 1) % f.ids.length;
      this.reveal(f.ids[f.at]);
      this.update();
    }
  }

  // ---- the three panes ---------------------------------------------------
  let metricTree, callTree, flatTree, sysTree;
  const callPane = () => (S.callView === "flat" ? flatTree : callTree);
  // the selected metrics' shares summed (CUBE: "the next pane shows the sum of the selected nodes")
  function selShare() {
    const ids = [], less = [];
    for (const i of S.sel.metric) {
      const [a, l] = metricShare(i, metricTree.isOpen(i));
      ids.push(...a); less.push(...l);
    }
    return [ids, less];
  }
  const curData = () => (S.metric < 0 ? metricData([]) : metricData(...selShare()));
  const curInteger = () => S.metric >= 0 && selShare().flat().every((i) => metrics[i].integer);
  const metricRootOf = (i) => { while (metrics[i].parent != null) i = metrics[i].parent; return i; };

  function cnodeValue(c, open) {
    if (S.metric < 0) return NaN;
    const d = curData();
    return open ? d.excT[c] : d.incT[c];
  }
  // per location and region: the flat view's values, each region's exclusive values summed over its
  // call paths (CUBE's flat profile)
  const NR = V.regions.length;
  function regionData(d) {
    if (d.rexc) return d;
    d.rexc = new Float64Array(NR * NL).fill(NaN);
    for (let c = 0; c < NC; c++) {
      const rb = regionOf[c] * NL, cb = c * NL;
      for (let l = 0; l < NL; l++) {
        const v = d.exc[cb + l];
        if (v === v) d.rexc[rb + l] = d.rexc[rb + l] === d.rexc[rb + l] ? d.rexc[rb + l] + v : v;
      }
    }
    d.rexcT = new Float64Array(NR);
    for (let r = 0; r < NR; r++) d.rexcT[r] = aggregate(d.rexc, r * NL, NL, d.over);
    return d;
  }
  const usedRegions = Array.from(new Set(regionOf)).sort((a, b) => a - b);

  // per location, the selected call nodes' values summed (each inclusive when collapsed; an expanded
  // node's exclusive value holds its hidden children's, as CUBE accounts them), or the flat view's regions
  function locationValues() {
    const out = new Float64Array(NL).fill(NaN);
    if (S.metric < 0) return out;
    const d = curData();
    const add = (a, base) => {
      for (let l = 0; l < NL; l++) { const v = a[base + l]; if (v === v) out[l] = out[l] === out[l] ? out[l] + v : v; }
    };
    if (S.callView === "flat") {
      regionData(d);
      for (const r of S.sel.flat) add(d.rexc, r * NL);
      return out;
    }
    for (const c of S.sel.call) {
      if (!callTree.isOpen(c)) { add(d.inc, c * NL); continue; }
      add(d.exc, c * NL);
      for (const k of cnodeKids(c)) if (callTree.hidden.has(k)) add(d.inc, k * NL);
    }
    return out;
  }
  let locVals = new Float64Array(NL);
  // a leaf (a thread, or a rank of one thread) holds the values; an expanded grouping node has none of
  // its own: undefined, "-" (user guide 1.5.2.2); collapsed, its locations' values combined
  function sysValue(id, open) {
    const n = sysNodes[id];
    if (n.loc !== undefined) return locVals[n.loc];
    if (open) return NaN;
    return aggregate(Float64Array.from(n.locs, (l) => locVals[l]), 0, n.locs.length, curData().over);
  }
  // the least and greatest inclusive value of a system node's peers (the nodes at its depth)
  function sysPeers(id, cache) {
    const depth = sysDepth(id);
    if (!cache.has(depth)) {
      let mn = Infinity, mx = -Infinity;
      for (const n of sysNodes) {
        if (sysDepth(n.id) !== depth) continue;
        const v = sysValue(n.id, false);
        if (v === v) { mn = Math.min(mn, v); mx = Math.max(mx, v); }
      }
      cache.set(depth, [mn, mx]);
    }
    return cache.get(depth);
  }

  // 100 % of the modes that refer to a pane on the left (user guide 1.5.2.2): the root of the selected
  // metric (collapsed), the selected metrics as shown, the roots of the selected call paths (their
  // inclusive values summed), the selected call paths as shown (summed)
  const REFS = {
    mroot: () => (S.metric < 0 ? NaN : metricTotal([[metricRootOf(S.metric)], []])),
    msel: () => sumOf(S.sel.metric.map((i) => metricTree.shown(i))),
    croot: () => {
      if (S.callView === "flat") return sumOf(usedRegions.map((r) => flatTree.s.raw(r, false)));
      const rs = new Set(S.sel.call.map((c) => callTree.s.rootOf(c)));
      return sumOf([...rs].map((r) => cnodeValue(r, false)));
    },
    csel: () => sumOf(S.sel[S.callView === "flat" ? "flat" : "call"].map((c) => callPane().shown(c))),
    ext: () => (S.metric < 0 ? NaN : externalTotal(metricRootOf(S.metric))),
  };
  // CUBE's external percent (like metric root percent, 100 % from another experiment): offered where the
  // page has one, a difference's subtrahend
  const EXTERNAL = V.external || null;
  const externalTotal = (i) => { const t = EXTERNAL && EXTERNAL.totals[metrics[i].name]; return t == null ? NaN : t; };
  const MODES = {abs: "Absolute", root: "Own root percent", mroot: "Metric root percent",
    msel: "Metric selection percent", croot: "Call root percent", csel: "Call selection percent",
    peer: "Peer percent", peerdist: "Peer distribution", sel: "Selection percent (this tree)",
    ext: "External percent"};
  // as CUBE offers them: percentages of a pane's own root and of the panes on its left; peers in the
  // system tree only
  const PANE_MODES = {metric: ["abs", "root", "sel"], call: ["abs", "root", "mroot", "msel", "sel"],
    system: ["abs", "root", "mroot", "msel", "croot", "csel", "peer", "peerdist", "sel"]};
  if (V.external) for (const pane in PANE_MODES) PANE_MODES[pane].push("ext");

  function paneBox(pane, title, trees) {
    const tree = trees[0];
    const sel = el("select", {class: "mode", "data-mode": pane,
      onchange: (ev) => { S.modes[pane] = ev.target.value; for (const t of trees) t.update(); }});
    for (const v of PANE_MODES[pane]) {
      sel.append(el("option", {value: v, text: MODES[v], title: v === "ext" ? "100 %: " + V.external.name : MODES[v]}));
    }
    const info = el("div", {class: "info", "data-info": pane});
    for (const t of trees) t.infoBox = info;
    const active = () => (pane === "call" ? callPane() : tree);
    const findBox = el("input", {class: "find", type: "search", "data-find": pane, placeholder: "find (text or regex)"});
    const count = el("span", {class: "found-count", "data-found": pane});
    const runFind = () => { const n = active().find(findBox.value); count.textContent = findBox.value ? n + " found" : ""; };
    findBox.addEventListener("input", runFind);
    findBox.addEventListener("keydown", (ev) => { if (ev.key === "Enter") { ev.preventDefault(); active().findNext(); } });
    const next = el("button", {class: "find-next", "data-find-next": pane, text: "next", onclick: () => active().findNext()});
    const head = el("div", {class: "panehead"}, el("b", {text: title}));
    if (pane === "call" && V.kind !== "counts" && NC > 1) { // a flat view of one node says nothing more
      const view = el("select", {class: "view", "data-view": "call", onchange: (ev) => switchCallView(ev.target.value)},
        el("option", {value: "tree", text: "call tree"}), el("option", {value: "flat", text: "flat profile"}));
      head.append(view);
    }
    head.append(sel);
    return el("div", {class: "pane", id: "pane-" + pane}, head,
      el("div", {class: "findbar"}, findBox, next, count), ...trees.map((t) => t.box), info);
  }

  function switchCallView(view) {
    S.callView = view;
    callTree.box.style.display = view === "flat" ? "none" : "";
    flatTree.box.style.display = view === "flat" ? "" : "none";
    if (view === "flat" && !S.sel.flat.length && S.cnode >= 0) { S.region = regionOf[S.cnode]; S.sel.flat = [S.region]; }
    callPane().render();
    systemChanged();
  }

  // CUBE's "expand largest": from a node, open the child with the largest inclusive value, and on
  // until a leaf; on opening (untilSplit) only as long as one child holds (nearly) the node's whole
  // value, so that the path stops where the value splits: at main, not at the program's root whose
  // start-up and helper threads took a few samples beside it.  The last node reached.
  const SPLIT = 0.9; // a child holding less of its parent's value than this: the value splits there
  function largestPath(tree, from, untilSplit) {
    let c = from;
    for (;;) {
      const kids = tree.kidsOf(c);
      if (!kids.length) return c;
      const v = (k) => { const x = Math.abs(tree.s.raw(k, false)); return x === x ? x : -1; };
      let best = kids[0];
      for (const k of kids) if (v(k) > v(best)) best = k;
      if (untilSplit && !(v(best) > 0 && v(best) >= SPLIT * v(c))) return c;
      tree.open.add(c);
      c = best;
    }
  }

  // ---- the context menu (user guide 1.5.2.4): right click on a tree ------
  const menuBox = el("div", {class: "ctxmenu", id: "ctxmenu", style: "display:none"});
  const infoPanel = el("div", {class: "nodeinfo", id: "node-info", style: "display:none"});
  document.addEventListener("click", (ev) => { if (!menuBox.contains(ev.target)) menuBox.style.display = "none"; });
  document.addEventListener("keydown", (ev) => { if (ev.key === "Escape") menuBox.style.display = "none"; });
  // [action, label, run, needs a reference node]: what every tree offers
  function treeActions(tree, ref, redraw) {
    const toRoot = (n) => { while (!tree.s.roots.includes(n) && tree.s.up(n) >= 0) n = tree.s.up(n); return n; };
    return [
      ["expand-all", "Expand all", () => { for (const id of tree.s.all()) if (tree.kidsOf(id).length) tree.open.add(id); redraw(); }],
      ["collapse-all", "Collapse all", () => {
        tree.open.clear();
        const sel = tree.s.selected();
        if (sel != null && sel >= 0 && toRoot(sel) !== sel) tree.s.onSelect(toRoot(sel), false); // as a collapse does
        redraw();
      }],
      ["expand-largest", "Expand largest path", () => { largestPath(tree, ref, false); redraw(); }, true],
    ];
  }
  // hiding (not in the metric tree): a hidden node's inclusive value stays in its parent's exclusive one
  function hideActions(tree, ref, redraw) {
    return [
      ["hide", "Hide this", () => {
        // a root gives the selection to another root; the last one shown stays
        const root = tree.s.roots.includes(ref);
        const to = root ? tree.s.roots.find((r) => r !== ref && !tree.hidden.has(r)) : tree.s.up(ref);
        if (to === undefined) return;
        tree.hidden.add(ref);
        if (tree.s.selection().some((x) => tree.below(x, ref))) tree.s.onSelect(to, false);
        redraw();
      }, true],
      ["show-hidden", "Show hidden children", () => {
        for (const k of tree.s.kids(ref)) if (!tree.pruned.has(k)) tree.hidden.delete(k);
        redraw();
      }, true],
      ["show-all", "Show all hidden (no hiding)", () => {
        for (const k of [...tree.hidden]) if (!tree.pruned.has(k)) tree.hidden.delete(k);
        redraw();
      }],
    ];
  }
  // CUBE's "cut all tree" (call tree only); a selection cut off moves to the node cut at
  function cutActions(tree, ref, redraw) {
    const cutOff = (keep) => S.sel.call.some((c) => !keep(c));
    const prune = (c) => { tree.hidden.add(c); tree.pruned.add(c); };
    return [
      ["set-root", "Cut: set as root", () => {
        tree.s.roots = [ref];
        tree.open.add(ref);
        if (cutOff((c) => tree.below(c, ref))) tree.s.onSelect(ref, false);
        redraw();
      }, true],
      ["prune", "Cut: prune (its value goes to its caller's exclusive value)", () => {
        const up = tree.s.up(ref);
        if (up < 0 || tree.s.roots.includes(ref)) return; // a root stays: set another root instead
        prune(ref);
        if (cutOff((c) => !tree.below(c, ref))) tree.s.onSelect(up, false);
        redraw();
      }, true],
      ["set-leaf", "Cut: set as leaf", () => {
        for (const k of tree.s.kids(ref)) prune(k);
        if (cutOff((c) => c === ref || !tree.below(c, ref))) tree.s.onSelect(ref, false);
        redraw();
      }, true],
      ["uncut", "Undo the cuts", () => {
        tree.s.roots = roots.slice();
        for (const k of tree.pruned) tree.hidden.delete(k);
        tree.pruned.clear();
        redraw();
      }],
    ];
  }
  function contextMenu(tree, ref, x, y) {
    menuBox.textContent = "";
    const redraw = () => { tree.render(); tree.s.onToggle(null); };
    const actions = [...treeActions(tree, ref, redraw),
      ...(tree.s.pane !== "metric" ? hideActions(tree, ref, redraw) : []),
      ...(tree === callTree ? cutActions(tree, ref, redraw) : []),
      ["colour-range", "Colour range (min/max values)...", () => askRange(tree)],
      ["sort-value", "Sort by value", () => { tree.sortBy = "value"; redraw(); }],
      ["sort-name", "Sort by name", () => { tree.sortBy = "name"; redraw(); }],
      ["info", "Info", () => showInfo(tree, ref), true]];
    for (const [action, label, run, needsRef] of actions) {
      if (needsRef && ref == null) continue; // clicked beside the nodes: no reference node
      menuBox.append(el("div", {class: "item", "data-action": action, text: label,
        onclick: () => { menuBox.style.display = "none"; run(); }}));
    }
    menuBox.style.display = "";
    // at the pointer, kept inside the window
    menuBox.style.left = Math.max(0, Math.min(x, window.innerWidth - menuBox.offsetWidth - 4)) + "px";
    menuBox.style.top = Math.max(0, Math.min(y, window.innerHeight - menuBox.offsetHeight - 4)) + "px";
  }
  // CUBE's "Min/max values": the values at the colour scale's ends, in the pane's mode; empty: the tree's own
  function askRange(tree) {
    const now = tree.range ? tree.range.join(" ") : "";
    const text = window.prompt("Colour scale: the least and the greatest value (empty: the tree's own)", now);
    if (text === null) return; // cancelled: no change, as in CUBE
    const nums = text.trim().split(/[\s,;]+/).filter((x) => x).map(Number);
    tree.range = nums.length === 2 && nums.every(Number.isFinite) && nums[1] > nums[0] ? nums : null;
    tree.update();
  }
  function showInfo(tree, id) {
    infoPanel.textContent = "";
    const lines = tree.s.info(id);
    infoPanel.append(el("button", {class: "close", text: "close", onclick: () => { infoPanel.style.display = "none"; }}));
    const t = el("table");
    for (const [k, v] of lines) t.append(el("tr", {"data-key": k}, el("th", {text: k}), el("td", {text: String(v)})));
    infoPanel.append(t);
    infoPanel.style.display = "";
  }
  function valueText(tree, id) {
    const mode = S.modes[tree.s.pane], v = tree.display(id);
    if (mode !== "abs") return pct(v);
    const unit = tree.s.pane === "metric" ? unitOf(id) : sameUnit();
    return fmt(v, tree.s.integer(id)) + (unit && v === v ? " " + unit : "");
  }
  // the unit of what the call and system panes show: the selected metrics' when they share one
  function sameUnit() {
    const units = new Set(S.sel.metric.map(unitOf));
    return units.size === 1 ? [...units][0] : "";
  }

  // a click (add: with Ctrl) in a tree: the new selection list and its latest node
  function choose(list, id, add, sameGroup) {
    if (!add || !list.length || (sameGroup && !sameGroup(list[0], id))) return [id];
    if (!list.includes(id)) return [...list, id];
    return list.length > 1 ? list.filter((x) => x !== id) : list; // Ctrl+click on a selected node: one less
  }
  const latest = (list) => list[list.length - 1];

  function buildPanes() {
    metricTree = new Tree({
      pane: "metric", roots: metricRoots, key: Number,
      kids: (i) => metrics[i].kids,
      up: (i) => metrics[i].parent,
      label: (i) => withUnit(metrics[i])
        + overLabel(metrics[i]),
      attrs: (i) => ({"data-metric": metrics[i].name, title: metrics[i].description || metrics[i].name}),
      raw: (i, open) => metricTotal(metricShare(i, open)),
      rootOf: metricRootOf,
      comparable: (i, j) => metricRootOf(i) === metricRootOf(j) && metrics[i].unit === metrics[j].unit,
      integer: (i) => metrics[i].integer,
      all: () => metrics.map((m) => m.index),
      info: (i) => [["metric", metrics[i].display], ["unique name", metrics[i].name], ["unit", metrics[i].unit || "-"],
        ["description", metrics[i].description || "-"], ["over locations", metrics[i].over],
        ["derived", metrics[i].derived ? "yes" : "no"], ["value", valueText(metricTree, i)]],
      selected: () => S.metric,
      selection: () => S.sel.metric,
      // several metrics within one root's subtree only (CUBE): their sum is what the next panes show
      onSelect: (i, add) => {
        S.sel.metric = choose(S.sel.metric, i, add, (a, b) => metricRootOf(a) === metricRootOf(b));
        S.metric = S.sel.metric.includes(i) ? i : latest(S.sel.metric);
        metricChanged();
      },
      onToggle: (i) => { metricTree.update(); if (i === null || S.sel.metric.includes(i)) metricChanged(); },
    });

    const regionName = (c) => V.regions[regionOf[c]].name;
    const callRootOf = (c) => { while (!callTree.s.roots.includes(c) && parent[c] >= 0) c = parent[c]; return c; };
    callTree = new Tree({
      pane: "call", roots: roots.slice(), key: Number, sortBy: "value",
      kids: cnodeKids,
      up: (c) => parent[c],
      label: (c) => regionName(c) + (V.cnodes.line[c] > 0 ? " :" + V.cnodes.line[c] : ""),
      attrs: (c) => ({"data-cnode": String(c), "data-region": regionName(c)}),
      raw: cnodeValue,
      rootOf: callRootOf,
      max: () => {
        if (S.metric < 0) return 0;
        const t = curData().incT;
        let m = 0;
        for (let c = 0; c < NC; c++) { const v = Math.abs(t[c]); if (v > m) m = v; }
        return m;
      },
      integer: curInteger,
      all: () => Array.from({length: NC}, (_, c) => c).filter(isShownCnode),
      info: (c) => {
        const path = [];
        for (let n = c; n >= 0; n = parent[n]) path.unshift(regionName(n));
        const r = V.regions[regionOf[c]];
        return [["region", r.name], ["call path", path.join(" > ")], ["call path id", c],
          ["module", r.module || "-"], ["file", r.file || "-"], ["begins at line", r.line || "-"],
          ["called from line", V.cnodes.line[c] > 0 ? V.cnodes.line[c] : "-"],
          ["inclusive", fmt(cnodeValue(c, false))], ["exclusive", fmt(cnodeValue(c, true))],
          ["value shown", valueText(callTree, c)]];
      },
      selected: () => S.cnode,
      selection: () => S.sel.call,
      onSelect: (c, add) => {
        S.sel.call = choose(S.sel.call, c, add);
        S.cnode = S.sel.call.includes(c) ? c : latest(S.sel.call);
        callTree.reselect(); systemChanged();
      },
      onToggle: (c) => { callTree.update(); if (c === null || S.sel.call.includes(c)) callChanged(); },
    });
    // a node is in the (cut) tree when no pruned node lies above it and one of the roots does
    function isShownCnode(c) {
      let under = false;
      for (let n = c; n >= 0; n = parent[n]) {
        if (callTree.pruned.has(n)) return false;
        if (callTree.s.roots.includes(n)) under = true;
      }
      return under;
    }

    flatTree = new Tree({
      pane: "call", roots: usedRegions, key: Number, sortBy: "value",
      kids: () => [],
      up: () => -1,
      label: (r) => V.regions[r].name,
      attrs: (r) => ({"data-flat-region": String(r), "data-region": V.regions[r].name}),
      raw: (r) => (S.metric < 0 ? NaN : regionData(curData()).rexcT[r]),
      rootOf: (r) => r,
      max: () => {
        if (S.metric < 0) return 0;
        let m = 0;
        for (const v of regionData(curData()).rexcT) if (Math.abs(v) > m) m = Math.abs(v);
        return m;
      },
      integer: curInteger,
      all: () => usedRegions,
      info: (r) => [["region", V.regions[r].name], ["module", V.regions[r].module || "-"],
        ["file", V.regions[r].file || "-"], ["begins at line", V.regions[r].line || "-"],
        ["call paths", Array.from(regionOf).filter((x) => x === r).length], ["value shown", valueText(flatTree, r)]],
      selected: () => S.region,
      selection: () => S.sel.flat,
      onSelect: (r, add) => {
        S.sel.flat = choose(S.sel.flat, r, add);
        S.region = S.sel.flat.includes(r) ? r : latest(S.sel.flat);
        flatTree.reselect(); systemChanged();
      },
      onToggle: () => flatTree.update(),
    });
    flatTree.box.dataset.tree = "flat";
    flatTree.box.style.display = "none";

    const sysOpen = sysNodes.filter((n) => n.kind === "machine" || n.kind === "node").map((n) => n.id);
    sysTree = new Tree({
      pane: "system", roots: sysRoots, key: Number, initiallyOpen: sysOpen,
      kids: (id) => sysNodes[id].kids,
      up: (id) => sysNodes[id].up,
      label: (id) => sysNodes[id].name,
      attrs: (id) => {
        const n = sysNodes[id], a = {"data-sys": n.kind};
        if (n.kind === "rank") a["data-rank"] = String(n.rank);
        if (n.loc !== undefined) a["data-location"] = String(n.loc);
        return a;
      },
      raw: sysValue,
      rootOf: (id) => { while (sysNodes[id].up >= 0) id = sysNodes[id].up; return id; },
      peers: sysPeers,
      // the largest value in the tree, collapsed nodes' included (CUBE's colour scale): the machine's
      // total where values add up, so that a thread of two is not red for being the larger one; not
      // the largest thread's value, which makes every rank of one thread saturate
      max: () => {
        let m = 0;
        for (const n of sysNodes) { const v = Math.abs(sysValue(n.id, false)); if (v > m) m = v; }
        return m;
      },
      integer: curInteger,
      all: () => sysNodes.map((n) => n.id),
      info: (id) => [["level", sysNodes[id].kind], ["name", sysNodes[id].name],
        ["locations", sysNodes[id].locs.map((l) => V.locations[l].label).join(", ")],
        ["value shown", valueText(sysTree, id)]],
      selected: () => S.sys,
      selection: () => S.sel.system,
      onSelect: (id, add) => {
        S.sel.system = choose(S.sel.system, id, add);
        S.sys = S.sel.system.includes(id) ? id : latest(S.sel.system);
        sysTree.reselect();
      },
      onToggle: () => sysTree.update(),
    });

    const panes = el("div", {class: "panes"},
      paneBox("metric", "Metric tree", [metricTree]), paneBox("call", "Call tree", [callTree, flatTree]),
      paneBox("system", "System tree", [sysTree]));
    for (const t of [metricTree, callTree, flatTree, sysTree]) t.info = () => infoLine(t);
    metricTree.render();
    // the call tree opens on its hot path: from the root of the largest inclusive value down to the first
    // node where the value splits, that node open (its children show how it splits) and selected
    if (roots.length) {
      const v = (c) => { const x = Math.abs(cnodeValue(c, false)); return x === x ? x : -1; };
      let top = roots[0];
      for (const r of roots) if (v(r) > v(top)) top = r;
      const hot = largestPath(callTree, top, true);
      if (cnodeKids(hot).length) callTree.open.add(hot);
      S.cnode = hot;
      S.sel.call = [hot];
    }
    locVals = locationValues();
    callTree.render();
    sysTree.render();
    requestAnimationFrame(() => { const r = callTree.rows.get(S.cnode); if (r) r.scrollIntoView({block: "nearest"}); });
    return el("div", null, panes, menuBox, infoPanel);
  }

  // the line under a tree: the selected value with its unit, whether inclusive or exclusive, and where it
  // lies on the colour scale (CUBE's selected value info: the scale's minimum and maximum, the position)
  function infoLine(t) {
    const sel = t.s.selection().filter((id) => t.rows.has(id));
    const box = t.infoBox;
    if (t.box.style.display === "none") return; // the call pane's other view writes the line
    if (!sel.length) { box.textContent = ""; return; }
    const id = t.s.selected();
    const mode = S.modes[t.s.pane];
    let text;
    if (sel.length > 1) {
      const sum = sumOf(sel.map((s) => t.display(s)));
      const unit = mode === "abs" ? (t.s.pane === "metric" ? unitOf(sel[0]) : sameUnit()) : "";
      text = sel.length + " selected: sum " + (mode === "abs" ? fmt(sum) + (unit ? " " + unit : "") : pct(sum));
    } else {
      const r = t.rows.get(id) || t.rows.get(sel[0]);
      text = "selected: " + r.children[3].textContent + " = " + valueText(t, t.s.key(r.dataset.id))
        + (t.isOpen(t.s.key(r.dataset.id)) && !["peer", "peerdist"].includes(mode) ? " (exclusive)" : " (inclusive)");
    }
    const [lo, hi] = t.ends(id);
    const unit = mode === "abs" ? (t.s.pane === "metric" ? unitOf(id) : sameUnit()) : "%";
    const place = t.place(id, mode === "abs" ? t.base(id) : t.display(id));
    const u = (unit ? " " + unit : "") + (t.userEnds() ? " (u)" : ""); // (u): user-defined, as CUBE marks it
    const pos = place === null ? "outside the range" : place === place ? (place * 100).toFixed(1) + " %" : "-";
    box.textContent = text + " · scale min " + fmt(lo) + u + ", max " + fmt(hi) + u + " · position " + pos;
    box.dataset.min = String(lo);
    box.dataset.max = String(hi);
    box.dataset.position = place === null || !(place === place) ? "" : String(place * 100);
  }

  function repaint() { for (const t of [metricTree, callTree, flatTree, sysTree]) if (t) t.update(); }
  function metricChanged() {
    metricTree.update();
    callPane().render(); // order of children follows the metric
    callChanged();
    dirty();
  }
  function callChanged() {
    callPane().update();
    systemChanged();
  }
  function systemChanged() {
    locVals = locationValues();
    sysTree.update();
    showSource();
  }

  // ---- the source view (as vprof showed it) ------------------------------
  const sourceBox = el("div", {class: "source", id: "source"});
  const sourceByFile = new Map(V.sources.map((s) => [s.file, s]));
  function functionRange(region, src) {
    // from the function's first line to the line before the next function of the same file
    const begin = region.line;
    const last = src.lines.length || Infinity; // no text: as far as the samples go
    if (!(begin > 0)) return [1, last];
    let end = last;
    for (const r of V.regions) if (r.file === region.file && r.line > begin && r.line - 1 < end) end = r.line - 1;
    return [begin, Math.max(end, begin)];
  }
  function showSource() {
    sourceBox.textContent = "";
    // a report without line samples (a counting report) has no source view: nothing to invite a click
    if (!V.sources.length) { sourceBox.style.display = "none"; return; }
    const at = S.callView === "flat" ? S.region : S.cnode >= 0 ? regionOf[S.cnode] : -1;
    if (at < 0) return;
    const region = V.regions[at];
    const src = region.file != null ? sourceByFile.get(region.file) : null;
    if (!src) {
      sourceBox.append(el("p", {class: "note", text: "Source: select a function whose source file the profile names ("
        + region.name + ": " + (region.file ? "no line samples for " + region.file : "no source file") + ")."}));
      return;
    }
    // the file not read here (not found, too large, not text): its lines with samples all the same,
    // numbers and percentages without their text
    const textless = !src.lines.length;
    const head = el("p", {class: "srchead"}, el("b", {text: region.name}),
      " in " + (src.path || src.file) + (src.note ? " (" + src.note + ")" : ""));
    if (textless) {
      head.append(el("span", {class: "nosource", text: "  The source file " + (!src.note || src.note.startsWith("not found")
        ? "was not found here" : "was not read") + ": the lines with samples are listed without their text."}));
    }
    sourceBox.append(head);
    const numbers = textless ? Object.keys(src.samples).map(Number).filter((n) => n > 0).sort((a, b) => a - b) : null;
    const [begin, end] = functionRange(region, src);
    // the hottest line: the most samples (a difference's: the largest gain or
    // loss), in the function's lines when it has any there, else in the file
    let hot = -1, hotSamples = 0;
    const pick = (inRange) => {
      for (const k in src.samples) {
        const line = +k, n = src.samples[k];
        if ((!inRange || (line >= begin && line <= end)) && Math.abs(n) > Math.abs(hotSamples)) {
          hot = line; hotSamples = n;
        }
      }
    };
    pick(true);
    if (hot < 0) pick(false);
    const share = (n) => (src.total ? n / src.total * 100 : 0);
    const table = el("table", {class: textless ? "lines textless" : "lines"});
    let hotRow = null;
    const frag = document.createDocumentFragment();
    const row = (text, line) => {
      const n = src.samples[String(line)] || 0;
      const p = share(n);
      const tr = el("tr", {"data-line": String(line), "data-samples": String(n), "data-percent": String(p)},
        el("td", {class: "ln", text: String(line)}), el("td", {class: "num", text: n ? fmt(n) : ""}),
        el("td", {class: "num", text: n ? p.toFixed(2) + " %" : ""}), el("td", {class: "code", text: text}));
      if (n) {
        const f = Math.min(Math.abs(n / hotSamples), 1);
        tr.style.background = DIFF ? (n < 0 ? `rgba(40,170,40,${0.15 + 0.5 * f})` : `rgba(230,40,40,${0.15 + 0.5 * f})`)
          : `rgba(255,${Math.round(200 - 120 * f)},0,${0.15 + 0.5 * f})`;
      }
      if (line === hot) { tr.classList.add("hot"); tr.dataset.hot = "1"; hotRow = tr; }
      frag.append(tr);
    };
    if (textless) for (const line of numbers) row("", line);
    else src.lines.forEach((text, i) => row(text, i + 1));
    table.append(frag);
    const scroller = el("div", {class: "srcscroll"}, table);
    sourceBox.append(scroller);
    if (hotRow) {
      head.append(el("span", {class: "hotinfo", text: (DIFF ? "  largest change, line " : "  hottest line ") + hot + ": "
        + fmt(hotSamples) + " samples, " + share(hotSamples).toFixed(2) + " %"}));
      requestAnimationFrame(() => { scroller.scrollTop = hotRow.offsetTop - scroller.clientHeight / 2; });
    }
  }

  // ---- charts, drawn by the page itself in SVG when their tab opens ------
  // Why no chart library: the page needs four kinds of chart (an icicle, bars, a heat map, box plots), a
  // few hundred lines; plotly.js drew them at 4.8 MB in every page, three times what a small profile's
  // whole page may weigh.  Every name is set as textContent, so a function named main<b> is drawn as those
  // characters, never as markup, and nothing in a chart links anywhere (pages are opened from disk on
  // clusters and must not send names or values off the machine).
  const SVGNS = "http://www.w3.org/2000/svg";
  function svg(tag, attrs, ...kids) {
    const e = document.createElementNS(SVGNS, tag);
    if (attrs) for (const k in attrs) { if (k === "text") e.textContent = attrs[k]; else e.setAttribute(k, attrs[k]); }
    for (const k of kids) if (k != null) e.append(k);
    return e;
  }
  const tip = (text) => svg("title", {text}); // the browser's own tooltip: no script, no markup
  const metricName = () => (S.metric < 0 ? "" : metrics[S.metric].display);
  const tabs = {};
  function dirty() { for (const t of Object.values(tabs)) if (t.chart) t.drawn = false; const a = activeTab(); if (a) a.draw(); }
  function activeTab() { return Object.values(tabs).find((t) => t.box.style.display !== "none" && t.chart); }

  // About n round ticks from lo to hi: 1, 2 or 5 times a power of ten apart
  function ticks(lo, hi, n = 5) {
    if (!(hi > lo)) hi = lo + 1;
    const raw = (hi - lo) / n, p = Math.pow(10, Math.floor(Math.log10(raw)));
    const step = [1, 2, 5, 10].map((k) => k * p).find((s) => s >= raw * 0.999);
    const out = [];
    for (let k = Math.ceil(lo / step - 1e-9); k * step <= hi * (1 + 1e-12) + 1e-300; k++) out.push(k * step || 0);
    return out;
  }
  const logTicks = (lo, hi) => ticks(Math.log10(lo), Math.log10(hi)).filter(Number.isInteger).map((e) => Math.pow(10, e));
  // [lo, hi] onto pixels [a, b]: linear, or logarithmic (all values positive)
  function scale(lo, hi, a, b, log) {
    const f = log ? Math.log10 : (v) => v;
    const l0 = f(lo), span = f(hi) - l0 || 1;
    return (v) => a + (f(v) - l0) / span * (b - a);
  }
  // an axis's range: a log axis where every value is positive and they span more than 100 x; a linear
  // one always holding 0 (bars start there)
  function range(vals, allowLog) {
    const v = vals.filter(Number.isFinite);
    if (!v.length) return {lo: 0, hi: 1, log: false};
    const mn = Math.min(...v), mx = Math.max(...v);
    if (allowLog && mn > 0 && mx / mn > 100) {
      return {lo: Math.pow(10, Math.floor(Math.log10(mn))), hi: Math.pow(10, Math.ceil(Math.log10(mx))), log: true};
    }
    return {lo: Math.min(0, mn), hi: Math.max(0, mx) || 1, log: false};
  }
  const textWidth = (names) => Math.min(360, 14 + 6.6 * Math.max(4, ...names.map((n) => String(n).length)));
  // an SVG to save as it is (the browser writes the file; nothing leaves the machine)
  function saveButton(name, node) {
    return el("button", {class: "save", text: "save SVG", onclick: () => {
      const blob = new Blob([new XMLSerializer().serializeToString(node)], {type: "image/svg+xml"});
      const a = document.createElement("a");
      a.href = URL.createObjectURL(blob);
      a.download = name + ".svg";
      a.click();
      setTimeout(() => URL.revokeObjectURL(a.href), 0);
    }});
  }
  // a chart's box: its heading, its SVG, a line under it for what the pointer is on
  function chartBox(box, id, title, node) {
    const div = el("div", {class: "plot", id});
    div.append(el("h3", null, title + " ", saveButton(id, node)), node);
    box.append(div);
    return div;
  }
  // a value axis along x (horizontal bars) or y (box plots): its line, ticks and the unit as its title
  function axis(g, sc, r, along, at, from, to, label) {
    const marks = (r.log ? logTicks(r.lo, r.hi) : ticks(r.lo, r.hi)).filter((t) => !r.whole || Number.isInteger(t));
    for (const t of marks) {
      const p = sc(t);
      g.append(along === "x"
        ? svg("line", {x1: p, x2: p, y1: from, y2: to, class: "grid"})
        : svg("line", {x1: from, x2: to, y1: p, y2: p, class: "grid"}));
      g.append(along === "x"
        ? svg("text", {x: p, y: at + 14, "text-anchor": "middle", class: "tick", text: fmt(t)})
        : svg("text", {x: at - 4, y: p + 4, "text-anchor": "end", class: "tick", text: fmt(t)}));
    }
    const mid = (sc(r.lo) + sc(r.hi)) / 2;
    g.append(along === "x"
      ? svg("text", {x: mid, y: at + 30, "text-anchor": "middle", class: "axis-title", text: label})
      : svg("text", {x: 12, y: mid, "text-anchor": "middle", class: "axis-title",
        transform: `rotate(-90 12 ${mid})`, text: label}));
  }

  // Horizontal bars, one per item {name, value, colour}, all of one unit (the axis's title says which)
  function hbars(items, unitLabel) {
    const L = textWidth(items.map((i) => i.name)), W = 940, R = W - 90, rowH = 24, top = 8;
    const H = top + rowH * items.length + 40;
    const r = range(items.map((i) => i.value), true);
    const x = scale(r.lo, r.hi, L, R, r.log);
    const s = svg("svg", {width: W, height: H, viewBox: `0 0 ${W} ${H}`, class: "chart"});
    axis(s, x, r, "x", top + rowH * items.length, top, top + rowH * items.length, unitLabel);
    const base = r.log ? L : x(0);
    items.forEach((it, k) => {
      const y = top + k * rowH, v = it.value, ok = Number.isFinite(v) && (!r.log || v > 0);
      const end = ok ? x(v) : base;
      s.append(svg("text", {x: L - 6, y: y + rowH / 2 + 4, "text-anchor": "end", class: "label", text: it.name}));
      s.append(svg("rect", {class: "bar", "data-name": it.name, "data-value": ok ? String(v) : "",
        x: Math.min(base, end), y: y + 3, width: Math.max(Math.abs(end - base), ok ? 1 : 0), height: rowH - 6,
        fill: it.colour}, tip(it.name + ": " + fmt(v))));
      s.append(svg("text", {x: Math.max(base, end) + 4, y: y + rowH / 2 + 4, class: "value", text: fmt(v)}));
    });
    return s;
  }

  // CUBE's colour ramp (blue > cyan > green > yellow > red) at f in [0, 1]; a difference's green >
  // white > red at f in [-1, 1]
  function ramp(f) {
    f = Math.min(Math.max(f, 0), 1) * (STOPS.length - 1);
    const i = Math.min(Math.floor(f), STOPS.length - 2), t = f - i;
    return STOPS[i].map((a, k) => Math.round(a + (STOPS[i + 1][k] - a) * t));
  }
  function diverging(f) {
    const t = Math.min(Math.abs(f), 1);
    return f < 0 ? [Math.round(255 - 255 * t), Math.round(255 - 105 * t), Math.round(255 - 255 * t)]
      : [Math.round(255 - 55 * t), Math.round(255 - 255 * t), Math.round(255 - 255 * t)];
  }
  const rgb = (c) => `rgb(${c[0]},${c[1]},${c[2]})`;
  const dark = (css) => { const [r, g, b] = css.match(/\d+/g).map(Number); return 0.3 * r + 0.59 * g + 0.11 * b < 110; };

  // Locations x columns: one pixel per cell on a canvas, scaled up as an SVG image (1,024 ranks x 40
  // columns are 40,960 cells: as SVG elements they would take seconds); the line under it names the cell
  // under the pointer.  z(l, j): the cell's value (NaN: none), shown(l, j): its text.
  function heatmap(rows, cols, z, shown) {
    const nr = rows.length, nc = cols.length;
    const L = textWidth(rows), W = 940, cw = Math.max(6, Math.min(40, (W - L - 80) / nc));
    const rh = Math.max(1, Math.min(18, 640 / nr)), top = 8, ph = rh * nr;
    const bottom = Math.min(150, 16 + 5.2 * Math.max(...cols.map((c) => String(c).length)));
    const H = Math.max(top + ph + bottom, 180);
    let lo = Infinity, hi = -Infinity;
    for (let l = 0; l < nr; l++) for (let j = 0; j < nc; j++) { const v = z(l, j); if (v === v) { lo = Math.min(lo, v); hi = Math.max(hi, v); } }
    const big = Math.max(Math.abs(lo), Math.abs(hi)) || 1;
    const cv = document.createElement("canvas");
    cv.width = nc; cv.height = nr;
    const cx = cv.getContext("2d"), img = cx.createImageData(nc, nr);
    for (let l = 0; l < nr; l++) for (let j = 0; j < nc; j++) {
      const v = z(l, j), o = (l * nc + j) * 4;
      const c = v !== v ? [221, 221, 221] : DIFF ? diverging(v / big) : ramp(hi > lo ? (v - lo) / (hi - lo) : 1);
      img.data[o] = c[0]; img.data[o + 1] = c[1]; img.data[o + 2] = c[2]; img.data[o + 3] = 255;
    }
    cx.putImageData(img, 0, 0);
    const s = svg("svg", {width: W, height: H, viewBox: `0 0 ${W} ${H}`, class: "chart"});
    const image = svg("image", {x: L, y: top, width: cw * nc, height: ph, preserveAspectRatio: "none",
      href: cv.toDataURL(), style: "image-rendering: pixelated", class: "hm"});
    s.append(image);
    const every = Math.ceil(nr / Math.floor(ph / 12)); // a label every 12 px at least
    for (let l = 0; l < nr; l += every) {
      s.append(svg("text", {x: L - 4, y: top + (l + 0.5) * rh + 4, "text-anchor": "end", class: "label", text: rows[l]}));
    }
    cols.forEach((name, j) => {
      const x = L + (j + 0.5) * cw, y = top + ph + 8;
      s.append(svg("text", {x, y, "text-anchor": "end", transform: `rotate(-50 ${x} ${y})`, class: "label", text: name}));
    });
    // the scale: lowest and highest value at the ends of a bar of the colours
    const sx = L + cw * nc + 16;
    for (let k = 0; k < 20; k++) {
      const f = 1 - k / 19;
      s.append(svg("rect", {x: sx, y: top + k * 8, width: 14, height: 8,
        fill: rgb(DIFF ? diverging(f * 2 - 1) : ramp(f))}));
    }
    s.append(svg("text", {x: sx + 18, y: top + 8, class: "tick", text: fmt(DIFF ? big : hi)}));
    s.append(svg("text", {x: sx + 18, y: top + 160, class: "tick", text: fmt(DIFF ? -big : lo)}));
    const line = el("div", {class: "note hmcell", text: "Point at a cell for its value."});
    image.addEventListener("mousemove", (ev) => {
      const b = image.getBoundingClientRect();
      const j = Math.floor((ev.clientX - b.left) / b.width * nc), l = Math.floor((ev.clientY - b.top) / b.height * nr);
      if (j >= 0 && j < nc && l >= 0 && l < nr) line.textContent = rows[l] + " · " + cols[j] + ": " + shown(l, j);
    });
    return [s, line];
  }

  // Box plots, one per column {name, per (values per location)}, on one axis of one unit, as CUBE draws
  // them (user guide 1.6.5): whiskers from the minimum to the maximum, the box from the lower to the upper
  // quartile (linear interpolation, as numpy's percentile), the median a bold line, the mean a dashed one;
  // every value a dot where there are few locations
  function quantile(sorted, q) {
    const p = (sorted.length - 1) * q, i = Math.floor(p);
    return i + 1 < sorted.length ? sorted[i] + (sorted[i + 1] - sorted[i]) * (p - i) : sorted[i];
  }
  function boxStats(per) {
    const v = Array.from(per).filter((x) => x === x).sort((a, b) => a - b);
    if (!v.length) return null;
    const q1 = quantile(v, 0.25), med = quantile(v, 0.5), q3 = quantile(v, 0.75);
    return {n: v.length, min: v[0], q1, med, q3, max: v[v.length - 1],
      mean: v.reduce((a, b) => a + b, 0) / v.length};
  }
  function boxPlots(cols, unitLabel, labels) {
    const L = 70, bw = Math.max(8, Math.min(60, (940 - L - 20) / cols.length)), W = Math.max(240, L + 20 + bw * cols.length);
    const top = 10, ph = 300, bottom = 150, H = top + ph + bottom;
    const stats = cols.map((c) => c.stats || boxStats(c.per)); // given: a statistics file's figures
    const all = stats.filter(Boolean).flatMap((b) => [b.min, b.max]);
    const r = range(all, false);
    if (r.lo > 0) r.lo = 0;
    const y = scale(r.lo, r.hi, top + ph, top, false);
    const s = svg("svg", {width: W, height: H, viewBox: `0 0 ${W} ${H}`, class: "chart"});
    axis(s, y, r, "y", L, L, L + bw * cols.length, unitLabel);
    cols.forEach((c, j) => {
      const b = stats[j], cx = L + (j + 0.5) * bw, half = bw * 0.3;
      const name = c.stats ? c.name : c.name + " (" + imbalance(c.per).toFixed(2) + "x)";
      const xl = cx, yl = top + ph + 8;
      s.append(svg("text", {x: xl, y: yl, "text-anchor": "end", transform: `rotate(-50 ${xl} ${yl})`, class: "label", text: name}));
      if (!b) return;
      const g = svg("g", {class: "boxes", "data-column": c.name, "data-median": String(b.med), "data-mean": String(b.mean),
        "data-q1": String(b.q1), "data-q3": String(b.q3), "data-n": String(b.n)},
      tip(c.name + "\nmin " + fmt(b.min) + ", Q1 " + fmt(b.q1) + ", median " + fmt(b.med) + ", mean " + fmt(b.mean)
        + ", Q3 " + fmt(b.q3) + ", max " + fmt(b.max) + " (" + b.n + " values)"));
      g.append(svg("line", {x1: cx, x2: cx, y1: y(b.min), y2: y(b.q1), class: "whisker"}),
        svg("line", {x1: cx, x2: cx, y1: y(b.q3), y2: y(b.max), class: "whisker"}),
        svg("line", {x1: cx - half / 2, x2: cx + half / 2, y1: y(b.min), y2: y(b.min), class: "whisker"}),
        svg("line", {x1: cx - half / 2, x2: cx + half / 2, y1: y(b.max), y2: y(b.max), class: "whisker"}),
        svg("rect", {x: cx - half, y: y(b.q3), width: 2 * half, height: Math.max(1, y(b.q1) - y(b.q3)), class: "box"}),
        svg("line", {x1: cx - half, x2: cx + half, y1: y(b.med), y2: y(b.med), class: "median"}),
        svg("line", {x1: cx - half, x2: cx + half, y1: y(b.mean), y2: y(b.mean), class: "mean"}));
      const few = c.per.length <= 64;
      c.per.forEach((v, l) => {
        if (v === v && few) {
          g.append(svg("circle", {cx: cx + (few ? ((l * 7919) % 11 - 5) * half / 10 : 0), cy: y(v), r: 2.5, class: "dot"},
            tip(labels[l] + ": " + fmt(v))));
        }
      });
      s.append(g);
    });
    return s;
  }

  // ---- the flame graph: an icicle of the call tree (the root on top) ----
  const FLAME_MIN = 0.001; // least share of the shown total a block needs
  let flameTop = -1; // the call node zoomed into (-1: every root)
  function drawFlame(box) {
    box.textContent = "";
    if (S.metric < 0 || NC === 0) return;
    // sizes must add up: a ratio (a derived metric) gives way to the first metric that does
    let d = curData(), shownName = metricName();
    if (!d.summable) {
      const m = metrics.find((x) => x.summable);
      if (!m) { box.append(el("p", {class: "note", text: "No metric here adds up along the call tree."})); return; }
      d = metricData([m.index]);
      shownName = m.display + " (" + metricName() + " does not add up along the call tree)";
    }
    // each block's size: its subtree's magnitudes (a difference's gains and losses both take room,
    // coloured by sign), recomputed so that every parent holds at least the sum of its children
    const tot = new Float64Array(NC);
    for (let c = 0; c < NC; c++) { const v = d.excT[c]; tot[c] = v === v ? Math.abs(v) : 0; }
    for (let c = NC - 1; c >= 0; c--) if (parent[c] >= 0) tot[parent[c]] += tot[c];
    const tops = flameTop >= 0 ? [flameTop] : roots;
    let all = 0, big = 0;
    for (const r of tops) all += tot[r];
    for (let c = 0; c < NC; c++) { const v = Math.abs(d.incT[c]); if (v > big) big = v; }
    const W = Math.max(600, Math.min(box.clientWidth || 1200, 1600) - 10), rowH = 20;
    const blocks = []; // [cnode, x, width, depth]
    let depth = 0, left = 0;
    // lay out breadth first, children left to right from the largest; blocks under FLAME_MIN of the
    // shown total are left out (thousands of sliver blocks draw slowly and say nothing)
    let level = [];
    for (const r of tops.slice().sort((a, b) => tot[b] - tot[a])) {
      const w = all > 0 ? tot[r] / all * W : 0;
      if (tot[r] >= all * FLAME_MIN && w > 0) level.push([r, left, w, 0]);
      left += w;
    }
    while (level.length) {
      blocks.push(...level);
      const next = [];
      for (const [c, x, w] of level) {
        let at = x;
        for (const k of cnodeKids(c).sort((a, b) => tot[b] - tot[a])) {
          const kw = tot[c] > 0 ? tot[k] / tot[c] * w : 0;
          if (tot[k] >= all * FLAME_MIN) next.push([k, at, kw, depth + 1]);
          at += kw;
        }
      }
      level = next;
      depth++;
    }
    const H = depth * rowH + 4;
    const s = svg("svg", {width: W, height: H, viewBox: `0 0 ${W} ${H}`, class: "chart flame"});
    for (const [c, x, w, lv] of blocks) {
      const v = d.incT[c], f = big > 0 && v === v ? v / big : 0;
      const fill = DIFF ? rgb(diverging(f)) : rgb(YLORRD(Math.abs(f)));
      const name = V.regions[regionOf[c]].name;
      const share = all > 0 ? (tot[c] / all * 100).toFixed(2) + " %" : "";
      // a nested <svg> clips the name to its block
      const g = svg("svg", {x, y: lv * rowH, width: w, height: rowH, class: "block", "data-cnode": String(c)},
        svg("rect", {x: 0, y: 0, width: w, height: rowH - 1, fill, class: "slice"}),
        // dark blocks (the hottest) get white names
        svg("text", {x: 3, y: rowH - 6, class: "label", fill: dark(fill) ? "#fff" : "#222", text: name}),
        tip(name + "\n" + fmt(v) + " (" + share + " of the shown total)"));
      g.addEventListener("click", () => { flameTop = c === flameTop ? Math.max(parent[c], -1) : c; drawFlame(box); });
      s.append(g);
    }
    const kept = blocks.length;
    box.append(el("p", {class: "note", text: "Icicle of the call tree (" + shownName
      + (DIFF ? ": sizes are magnitudes, colour the signed change" : "")
      + "). Click a block to zoom into it, the top block again to zoom out."
      + (flameTop >= 0 ? " Zoomed into " + V.regions[regionOf[flameTop]].name + "." : "")
      + (kept < NC ? " " + (NC - kept) + " call paths under " + FLAME_MIN * 100 + " % of the shown total are left out." : "")}));
    chartBox(box, "flame-plot", "Flame graph: " + shownName, s);
  }
  const YL = [[255, 255, 204], [254, 217, 118], [253, 141, 60], [227, 26, 28], [128, 0, 38]];
  function YLORRD(f) {
    f = Math.min(Math.max(f, 0), 1) * (YL.length - 1);
    const i = Math.min(Math.floor(f), YL.length - 2), t = f - i;
    return YL[i].map((a, k) => Math.round(a + (YL[i + 1][k] - a) * t));
  }

  // per location and column: the chart's columns are regions (profiles) or
  // metrics (counting reports)
  function columns() {
    if (V.kind === "counts") {
      return metrics.filter((m) => V.values[m.name]).map((m) => {
        const d = metricData([m.index]);
        const per = new Float64Array(NL);
        for (let l = 0; l < NL; l++) {
          per[l] = aggregateRoots(d, l, m.over);
        }
        // events: what adds up and is no time (a mean of counting reports has fractional counts)
        return {name: withUnit(m) + overLabel(m), per, event: m.summable && !SECONDS.includes(m.unit), over: m.over,
          unit: m.unit, metric: m.index};
      });
    }
    if (S.metric < 0) return [];
    const d = curData();
    const NR = V.regions.length;
    const per = new Float64Array(NR * NL);
    if (d.sp) { // a single metric: its non-zero cells only, not every cell
      for (let i = 0; i < d.sp.at.length; i++) {
        const c = Math.floor(d.sp.at[i] / NL);
        per[regionOf[c] * NL + d.sp.at[i] - c * NL] += d.sp.val[i];
      }
    } else {
      for (let c = 0; c < NC; c++) {
        const rb = regionOf[c] * NL, cb = c * NL;
        for (let l = 0; l < NL; l++) { const v = d.exc[cb + l]; if (v === v) per[rb + l] += v; }
      }
    }
    const cols = [];
    for (let r = 0; r < NR; r++) {
      const p = per.subarray(r * NL, r * NL + NL);
      let s = 0;
      for (const v of p) s += Math.abs(v);
      if (s > 0) cols.push({name: V.regions[r].name, per: p, weight: s});
    }
    cols.sort((a, b) => b.weight - a.weight);
    return cols;
  }
  function aggregateRoots(d, l, over) {
    return aggregate(Float64Array.from(roots, (r) => d.inc[r * NL + l]), 0, roots.length, over);
  }
  function imbalance(per) {
    const mean = aggregate(per, 0, per.length, "mean");
    return mean > 0 ? aggregate(per, 0, per.length, "max") / mean : NaN;
  }
  // A counting report's columns grouped so that one axis holds one unit: the events (counts) together,
  // metrics of one named unit together (wall and CPU seconds), every metric without a unit (a ratio, a
  // rate) on an axis of its own.  [[axis title, columns], ...]
  function byUnit(cols) {
    const groups = new Map();
    for (const c of cols) {
      const m = metrics[c.metric];
      const key = c.event ? "\0count" : m.unit && m.unit !== "occ" ? "\0" + m.unit : c.name;
      const title = c.event ? "count" : m.unit && m.unit !== "occ" ? m.unit : m.display; // a rate's name says its unit
      if (!groups.has(key)) groups.set(key, [title, []]);
      groups.get(key)[1].push(c);
    }
    return Array.from(groups.values());
  }

  // ---- statistics of the selection (CUBE's system box plot, user guide 1.6.5; subsets 1.5.2.3) ----
  // The selected metric at the selected call path (inclusive when it is collapsed, exclusive when
  // expanded, as the call tree shows it) over the locations of the selected system node, in one of
  // CUBE's subsets: all of them; the visited ones (a value defined and non-zero); the non-idle threads
  // (threads that did anything: CPU time or samples above 0, so an MPI helper thread that took no sample
  // does not pull the mean down).  A location with no number is in no subset.
  const SUBSETS = [["all", "all locations"], ["visited", "visited (value defined and non-zero)"],
    ["busy", "non-idle threads (CPU time or samples > 0)"]];
  let subset = "all";
  // per location, whether it did anything: the first metric that counts samples or CPU time, over every
  // root; null when no metric says (every thread is then non-idle)
  let busyCache;
  function busy() {
    if (busyCache !== undefined) return busyCache;
    const m = metrics.find((x) => V.values[x.name] && /sample/i.test(x.name + " " + x.display))
      || metrics.find((x) => V.values[x.name] && /cpu/i.test(x.name + " " + x.display));
    busyCache = null;
    if (m) {
      const d = metricData([m.index]);
      if (d.sp) { // any positive cell of a location's (its roots' inclusive values hold them all)
        busyCache = new Uint8Array(NL);
        for (let i = 0; i < d.sp.at.length; i++) if (d.sp.val[i] > 0) busyCache[d.sp.at[i] % NL] = 1;
      } else {
        busyCache = Uint8Array.from({length: NL}, (_, l) => (roots.some((r) => d.inc[r * NL + l] > 0) ? 1 : 0));
      }
    }
    return busyCache;
  }
  function selectionValues() {
    if (S.metric < 0 || S.cnode < 0 || S.sys < 0) return {values: [], labels: []};
    const d = curData(), a = callTree && callTree.isOpen(S.cnode) ? d.exc : d.inc, b = busy();
    const values = [], labels = [];
    for (const l of sysNodes[S.sys].locs) {
      const v = a[S.cnode * NL + l];
      if (v !== v) continue;
      if (subset === "visited" && v === 0) continue;
      if (subset === "busy" && b && !b[l]) continue;
      values.push(v);
      labels.push(V.locations[l].label || "rank " + V.locations[l].rank + " thread " + V.locations[l].thread);
    }
    return {values, labels};
  }
  function describe(values) {
    const b = boxStats(values);
    if (!b) return null;
    const variance = values.reduce((s, v) => s + (v - b.mean) * (v - b.mean), 0) / values.length;
    return {...b, sum: values.reduce((s, v) => s + v, 0), sd: Math.sqrt(variance)};
  }
  // Vertical bars of how many values fall in each of (at most) ten equal bins
  function histogram(values, unitLabel) {
    const mn = Math.min(...values), mx = Math.max(...values), bins = mx > mn ? Math.min(10, values.length) : 1;
    const width = (mx - mn) / bins || 1, counts = new Array(bins).fill(0);
    for (const v of values) counts[Math.min(bins - 1, Math.floor((v - mn) / width))]++;
    const W = 520, L = 50, top = 10, ph = 160, H = top + ph + 46, bw = (W - L - 10) / bins;
    const r = {lo: 0, hi: Math.max(...counts), log: false, whole: true}; // counts of locations: whole ticks
    const y = scale(0, r.hi, top + ph, top, false);
    const s = svg("svg", {width: W, height: H, viewBox: `0 0 ${W} ${H}`, class: "chart"});
    axis(s, y, r, "y", L, L, W - 10, "locations");
    counts.forEach((n, k) => {
      const lo = mn + k * width, hi = bins === 1 ? mx : lo + width;
      s.append(svg("rect", {class: "bar", x: L + k * bw + 1, y: y(n), width: bw - 2, height: top + ph - y(n),
        fill: "#36c", "data-count": String(n), "data-from": String(lo), "data-to": String(hi)},
      tip(fmt(lo) + " to " + fmt(hi) + ": " + n + " location" + (n === 1 ? "" : "s"))));
    });
    s.append(svg("text", {x: L, y: top + ph + 16, class: "tick", text: fmt(mn)}));
    s.append(svg("text", {x: W - 10, y: top + ph + 16, "text-anchor": "end", class: "tick", text: fmt(mx)}));
    s.append(svg("text", {x: (L + W) / 2, y: top + ph + 34, "text-anchor": "middle", class: "axis-title", text: unitLabel}));
    return s;
  }
  function drawSelectionStats(box) {
    const section = el("section", {class: "selstats", id: "selection-stats"});
    box.append(section);
    if (S.metric < 0 || S.cnode < 0 || S.sys < 0 || NL < 2) return; // one location: nothing to spread
    const m = metrics[S.metric], where = V.regions[regionOf[S.cnode]].name;
    const kind = callTree && callTree.isOpen(S.cnode) ? "exclusive" : "inclusive";
    const pick = el("select", {id: "stat-subset", onchange: (ev) => { subset = ev.target.value; redraw(); }});
    for (const [v, t] of SUBSETS) pick.append(el("option", {value: v, text: t}));
    pick.value = subset;
    const body = el("div");
    section.append(el("h3", {text: "Statistics of the selection: " + withUnit(m) + " of " + where + " (" + kind
      + ") over " + sysNodes[S.sys].name}), el("label", null, "subset: ", pick), body);
    function redraw() {
      body.textContent = "";
      const {values, labels} = selectionValues();
      const st = describe(values);
      if (!st) { body.append(el("p", {class: "note", text: "No location of this subset has a value here."})); return; }
      const rows = [["count", st.n], ["sum", st.sum], ["mean", st.mean], ["standard deviation", st.sd], ["minimum", st.min],
        ["lower quartile", st.q1], ["median", st.med], ["upper quartile", st.q3], ["maximum", st.max]];
      const table = el("table", {class: "imbalance", id: "stat-table"});
      for (const [k, v] of rows) {
        table.append(el("tr", {"data-stat": k, "data-value": String(v)}, el("th", {text: k}), el("td", {class: "num", text: fmt(v)})));
      }
      const charts = el("div", {class: "statcharts"});
      chartBox(charts, "selection-box", "Box plot", boxPlots([{name: where, per: Float64Array.from(values)}], withUnit(m), labels));
      chartBox(charts, "selection-distribution", "Distribution", histogram(values, withUnit(m)));
      body.append(table, charts);
    }
    redraw();
  }
  // what the statistics depend on: redrawn when the Charts tab opens after any of it changed
  const selectionKey = () => [S.metric, S.cnode, S.sys, callTree && callTree.isOpen(S.cnode),
    metricTree && metricTree.isOpen(S.metric)].join();

  // ---- a statistics file's pattern statistics (CUBE, user guide 1.6.6.1 and appendix 3.1) --------
  // Given with the view (a CUBE file's .stat beside it, or psprocess --stat): per pattern its count of
  // instances and, when the file gives them, mean, median, minimum, maximum, sum, variance and quartiles,
  // as a table and as box plots (one chart per unit: a pattern's metric's); its most severe instances.
  const FIGURES = [["mean", "mean"], ["median", "median"], ["minimum", "min"], ["maximum", "max"], ["sum", "sum"],
    ["variance", "variance"], ["q1", "lower quartile"], ["q3", "upper quartile"]];
  function drawPatternStats(box) {
    const pats = V.statistics || [];
    if (!pats.length) return;
    const section = el("section", {class: "selstats", id: "pattern-stats"});
    box.append(section);
    section.append(el("h3", {text: "Pattern statistics (statistics file)"}));
    const head = el("tr", null, el("th", {text: "pattern"}), el("th", {text: "metric"}), el("th", {text: "count"}));
    for (const [, label] of FIGURES) head.append(el("th", {text: label}));
    const table = el("table", {class: "imbalance", id: "pattern-table"}, head);
    for (const p of pats) {
      const tr = el("tr", {"data-pattern": p.pattern, "data-count": String(p.count)}, el("td", {text: p.pattern}),
        el("td", {text: p.metric != null ? withUnit(metrics[p.metric]) : "metric " + p.metric_id + " of the CUBE file"}),
        el("td", {class: "num", text: fmt(p.count)}));
      for (const [k] of FIGURES) {
        const v = p.figures[k];
        tr.append(el("td", {class: "num", "data-figure": k, "data-value": v == null ? "" : String(v), text: v == null ? "" : fmt(v)}));
      }
      table.append(tr);
    }
    section.append(table);
    const groups = new Map();
    for (const p of pats) {
      const f = p.figures;
      if (f.minimum == null || f.maximum == null) continue; // a count alone: nothing to draw
      const unit = p.metric != null ? withUnit(metrics[p.metric]) : "value";
      if (!groups.has(unit)) groups.set(unit, []);
      groups.get(unit).push({name: p.pattern, per: [], stats: {n: p.count, min: f.minimum, max: f.maximum, med: f.median,
        mean: f.mean, q1: f.q1 != null ? f.q1 : f.median, q3: f.q3 != null ? f.q3 : f.median}});
    }
    let k = 0;
    for (const [unit, cols] of groups) {
      chartBox(section, k ? "pattern-box-" + k : "pattern-box", "Box plots of the patterns" + (groups.size > 1 ? ": " + unit : ""),
        boxPlots(cols, unit, []));
      k++;
    }
    const severe = pats.filter((p) => p.instances.length);
    if (severe.length) {
      const t = el("table", {class: "imbalance", id: "pattern-instances"}, el("tr", null, el("th", {text: "pattern"}),
        el("th", {text: "call node (CUBE file id)"}), el("th", {text: "enter"}), el("th", {text: "exit"}), el("th", {text: "duration"})));
      for (const p of severe) {
        for (const [c, enter, exit, duration] of p.instances) {
          t.append(el("tr", {"data-pattern": p.pattern}, el("td", {text: p.pattern}), el("td", {class: "num", text: String(c)}),
            el("td", {class: "num", text: fmt(enter)}), el("td", {class: "num", text: fmt(exit)}), el("td", {class: "num", text: fmt(duration)})));
        }
      }
      section.append(el("h3", {text: "Most severe instances"}), t);
    }
  }

  function drawCharts(box) {
    box.textContent = "";
    drawSelectionStats(box);
    drawPatternStats(box);
    const locLabels = V.locations.map((l) => l.label || "rank " + l.rank + " thread " + l.thread);
    const cols = columns();
    const signColour = (v) => (v < 0 ? "rgb(40,170,40)" : "rgb(230,60,60)");
    if (V.kind === "counts") {
      // one chart per unit: the events' counts in one, seconds in another, each ratio or rate alone
      // (a "faults per second" beside seconds on one axis would flatten one or the other)
      const value = (c) => aggregate(c.per, 0, c.per.length, c.over);
      byUnit(cols).forEach(([unit, list], k) => {
        const events = list[0].event;
        const items = list.map((c) => ({name: c.name, value: value(c), colour: DIFF ? signColour(value(c))
          : events ? "#36c" : "#d62"}));
        const title = (events ? "Event counts" + (NL > 1 ? " (all " + NL + " locations)" : "")
          : (metrics[list[0].metric].unit && metrics[list[0].metric].unit !== "occ" ? "In " + unit : list[0].name)
            + (NL > 1 ? " (over the locations: summed, or as marked)" : ""));
        chartBox(box, k === 0 && events ? "counts-plot" : "unit-plot-" + k, title, hbars(items, unit));
      });
    } else if (NL === 1 && cols.length) {
      const top = cols.slice(0, 30), unit = S.metric >= 0 ? withUnit(metrics[S.metric]) : "";
      chartBox(box, "regions-plot", metricName() + " per function (exclusive, top " + top.length + ")",
        hbars(top.map((c) => ({name: c.name, value: c.per[0], colour: DIFF ? signColour(c.per[0]) : "#36c"})), unit));
    }
    if (NL > 1 && cols.length) {
      const top = V.kind === "counts" ? cols : cols.slice(0, 40);
      const scaled = V.kind === "counts"; // different events: each column relative to its mean
      const means = top.map((c) => aggregate(c.per, 0, NL, "mean")); // once per column, not per cell
      const z = (l, j) => {
        const v = top[j].per[l];
        return !scaled ? v : v === v && means[j] ? v / means[j] : NaN;
      };
      const [hm, line] = heatmap(locLabels, top.map((c) => c.name), z, (l, j) => fmt(top[j].per[l]));
      chartBox(box, "heatmap-plot", "Heat map: locations x " + (V.kind === "counts" ? "events (value / mean)"
        : "regions (" + metricName() + ", exclusive, top " + top.length + ")"), hm).append(line);

      const groups = V.kind === "counts" ? byUnit(top.slice(0, 25))
        : [[S.metric >= 0 ? withUnit(metrics[S.metric]) : "", top.slice(0, 25)]];
      groups.forEach(([unit, list], k) => {
        chartBox(box, k === 0 ? "boxplot-plot" : "boxplot-plot-" + k, "Box plots across locations, with the imbalance"
          + " (max / mean)" + (groups.length > 1 ? ": " + unit : ""), boxPlots(list, unit, locLabels));
      });

      const table = el("table", {class: "imbalance", id: "imbalance"},
        el("tr", null, el("th", {text: V.kind === "counts" ? "event" : "region"}), el("th", {text: "min"}),
          el("th", {text: "mean"}), el("th", {text: "max"}), el("th", {text: "max / mean"})));
      for (const c of top) {
        const [mn, mean, mx] = ["min", "mean", "max"].map((how) => aggregate(c.per, 0, NL, how));
        const imb = imbalance(c.per);
        table.append(el("tr", {"data-column": c.name, "data-imbalance": String(imb)},
          el("td", {text: c.name}), el("td", {class: "num", text: fmt(mn)}), el("td", {class: "num", text: fmt(mean)}),
          el("td", {class: "num", text: fmt(mx)}), el("td", {class: "num", text: Number.isFinite(imb) ? imb.toFixed(3) : "-"})));
      }
      box.append(el("h3", {text: "Imbalance per " + (V.kind === "counts" ? "event" : "region")}), table);
    }
    if (box.children.length === 1 + (V.statistics && V.statistics.length ? 1 : 0)) box.append(el("p", {class: "note", text: "No chart for this data."}));
  }

  function buildContext(box) {
    const t = el("table", {class: "context", id: "context"});
    for (const [k, v] of V.context) t.append(el("tr", {"data-key": String(k)}, el("th", {text: String(k)}), el("td", {text: String(v)})));
    box.append(el("h3", {text: "Run"}), t);
    box.append(el("h3", {text: "Events dropped"}));
    if (!V.dropped.length) box.append(el("p", {class: "note", text: "none"}));
    else {
      const d = el("table", {class: "dropped", id: "dropped"});
      for (const x of V.dropped) d.append(el("tr", {"data-event": x.event}, el("th", {text: x.event}), el("td", {text: x.why})));
      box.append(d);
    }
  }

  // The colour scale's settings in the header beside its legend: the user's min and max (both, or the
  // trees' own scale), the white and lightening thresholds in % of the scale; every tree recoloured.
  function scaleSettings() {
    const box = el("span", {class: "scale", id: "colour-scale"});
    const number = (key, label, title) => {
      const input = el("input", {type: "number", step: "any", id: "scale-" + key, title, placeholder: "-",
        onchange: () => {
          const v = parseFloat(input.value);
          SCALE[key] = Number.isFinite(v) ? v : null;
          note.textContent = userRange() ? " (u) user-defined range " + fmt(SCALE.min) + " to " + fmt(SCALE.max) : "";
          repaint();
        }});
      box.append(" " + label + " ", input);
    };
    const note = el("span", {class: "note", id: "scale-note"});
    number("min", "min", "the value at the scale's low end (with max; values outside are grey)");
    number("max", "max", "the value at the scale's high end (with min)");
    number("white", "white below %", "values below this % of the scale are white");
    number("light", "lighter below %", "colours below this % of the scale are lightened, more toward its low end");
    box.append(note);
    return box;
  }

  // ---- the page ----------------------------------------------------------
  function main() {
    const header = el("header", null, el("h1", {text: V.title}),
      el("span", {class: "kind", text: V.kind + " · " + NC + " call nodes · " + NL + " locations"}));
    if (V.dropped.length) {
      header.append(el("span", {class: "warn", id: "dropped-note", text: V.dropped.length + " event"
        + (V.dropped.length > 1 ? "s" : "") + " not measured: " + V.dropped.map((d) => d.event).join(", ")
        + " (see Context)"}));
    }
    if (!DIFF) {
      const bar = el("span", {class: "legend", id: "colour-legend"}, "low ");
      for (let i = 0; i <= 8; i++) bar.append(el("span", {class: "sq", style: "background:" + rgb(ramp(i / 8))}));
      bar.append(" high");
      header.append(bar);
    } else {
      header.append(el("span", {class: "legend", id: "diff-legend"},
        el("span", {class: "sq", style: "background:rgb(40,170,40)"}), " less (a gain)  ",
        el("span", {class: "sq", style: "background:rgb(230,60,60)"}), " more (a loss)"));
    }
    header.append(scaleSettings());
    const bar = el("nav", {class: "tabs"});
    const body = el("main");
    function tab(name, label, make, chart) {
      const box = el("section", {class: "tab", id: "tab-" + name, style: "display:none"});
      const t = {box, chart, drawn: false, draw: () => { if (!t.drawn) { t.drawn = true; make(box); } }};
      tabs[name] = t;
      const button = el("button", {"data-tab": name, text: label, onclick: () => {
        for (const [n, o] of Object.entries(tabs)) {
          o.box.style.display = n === name ? "" : "none";
          bar.querySelector(`[data-tab="${n}"]`).classList.toggle("on", n === name);
        }
        t.draw();
      }});
      bar.append(button);
      body.append(box);
      return t;
    }
    const trees = tab("trees", "Trees", (box) => { box.append(buildPanes(), sourceBox); showSource(); }, false);
    if (V.kind !== "counts" && NC > 1) tab("flame", "Flame graph", drawFlame, true);
    const charts = tab("charts", "Charts", drawCharts, true);
    const drawOnce = charts.draw;
    charts.draw = () => { // the statistics follow the selection made in the trees since
      const k = selectionKey();
      if (k !== charts.key) { charts.key = k; charts.drawn = false; }
      drawOnce();
    };
    tab("context", "Context", buildContext, false);
    document.body.append(header, bar, body);
    bar.firstChild.click();
    void trees;
    window.psuiteReady = performance.now();
  }
  main();
})();
