// psuite report page: draws the view embedded in #psuite-view (its schema:
// psuite/psprocess/html/__init__.py).  Plain JavaScript, no network; charts
// only through plotly.js, which the page carries inline.
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

  function floats(list) {
    const a = new Float64Array(list.length);
    for (let i = 0; i < list.length; i++) a[i] = list[i] === null ? NaN : list[i];
    return a;
  }

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

  const dataCache = new Map();
  // {exc, inc: Float64Array(NC*NL); excT, incT: Float64Array(NC) over all locations}: the metrics ids
  // summed, less the metrics in `less` (an expanded metric's own share)
  function metricData(ids, less = []) {
    const key = ids.join(",") + "-" + less.join(",");
    let d = dataCache.get(key);
    if (d) return d;
    const summable = ids.every((i) => metrics[i].summable);
    const over = ids.length === 1 && less.length === 0 ? metrics[ids[0]].over : summable ? "sum" : "mean";
    let exc, inc;
    if (ids.length === 1 && less.length === 0) {
      const vals = V.values[metrics[ids[0]].name] || {exclusive: new Array(NC * NL).fill(null)};
      exc = floats(vals.exclusive);
      inc = vals.inclusive != null ? floats(vals.inclusive) : null;
    } else {
      exc = new Float64Array(NC * NL);
      for (const i of ids) {
        const e = metricData([i]).exc;
        for (let j = 0; j < exc.length; j++) if (e[j] === e[j]) exc[j] += e[j];
      }
      for (const i of less) {
        const e = metricData([i]).exc;
        for (let j = 0; j < exc.length; j++) if (e[j] === e[j]) exc[j] -= e[j];
      }
    }
    if (inc === null || inc === undefined) {
      // sum exclusive values up the tree: parents come first, so walk back
      inc = new Float64Array(NC * NL);
      for (let j = 0; j < inc.length; j++) inc[j] = exc[j] === exc[j] ? exc[j] : 0;
      for (let c = NC - 1; c >= 0; c--) {
        const p = parent[c];
        if (p < 0) continue;
        const cb = c * NL, pb = p * NL;
        for (let l = 0; l < NL; l++) inc[pb + l] += inc[cb + l];
      }
      // a leaf whose only value is missing stays missing
      for (let c = 0; c < NC; c++) {
        if (childCount[c] !== 0) continue;
        for (let l = 0; l < NL; l++) if (exc[c * NL + l] !== exc[c * NL + l]) inc[c * NL + l] = NaN;
      }
    }
    const excT = new Float64Array(NC), incT = new Float64Array(NC);
    for (let c = 0; c < NC; c++) {
      excT[c] = aggregate(exc, c * NL, NL, over);
      incT[c] = aggregate(inc, c * NL, NL, over);
    }
    d = {exc, inc, excT, incT, summable, over};
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
    whiteBelow: 0, // percent of the colour scale below which squares are white
  };
  S.sel.metric = S.metric >= 0 ? [S.metric] : [];
  S.sel.system = S.sys >= 0 ? [S.sys] : [];

  // ---- colours: CUBE's blue > cyan > green > yellow > red; differences
  // green (less: a gain) and red (more: a loss) ----------------------------
  const STOPS = [[0, 0, 255], [0, 255, 255], [0, 255, 0], [255, 255, 0], [255, 0, 0]];
  function colour(v, max) {
    if (!(v === v) || !(max > 0)) return "#ddd";
    let f = Math.min(Math.abs(v) / max, 1);
    if (DIFF) {
      if (v === 0) return "#fff";
      const g = Math.round(235 - 175 * f);
      return v < 0 ? `rgb(${g - 20},${Math.round(200 - 60 * f) + 30},${g - 20})` : `rgb(230,${g - 40},${g - 40})`;
    }
    f *= STOPS.length - 1;
    const i = Math.min(Math.floor(f), STOPS.length - 2), t = f - i;
    const c = STOPS[i].map((a, k) => Math.round(a + (STOPS[i + 1][k] - a) * t));
    return `rgb(${c[0]},${c[1]},${c[2]})`;
  }
  // a colour square's colour: grey undefined, darker grey outside the user's range, white below the
  // threshold (CUBE's "white below"), else the scale's colour; sign: a difference's gain (-1) or loss
  function paint(sign, place) {
    if (place === null) return "#999";
    if (!(place === place)) return "#ddd";
    if (place * 100 < S.whiteBelow) return "#fff";
    return colour(sign * place, 1);
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
        sq.style.background = paint(DIFF && base === base ? Math.sign(base) : 1, this.place(id, mode === "abs" ? base : v));
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
      const a = this.range ? v : Math.abs(v);
      if (this.range && (a < lo || a > hi)) return null;
      return hi > lo ? Math.min((a - lo) / (hi - lo), 1) : NaN;
    }
    ends(id) { return this.range || [0, this.scale(id)]; }
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
    const u = (unit ? " " + unit : "") + (t.range ? " (u)" : ""); // (u): user-defined, as CUBE marks it
    const pos = place === null ? "outside the range" : place === place ? (place * 100).toFixed(1) + " %" : "-";
    box.textContent = text + " · scale min " + fmt(lo) + u + ", max " + fmt(hi) + u + " · position " + pos;
    box.dataset.min = String(lo);
    box.dataset.max = String(hi);
    box.dataset.position = place === null || !(place === place) ? "" : String(place * 100);
  }

  // CUBE's colouring threshold: values in the lowest part of the scale white, so that the rest stands out
  function thresholdControl() {
    const white = el("input", {type: "number", id: "white-below", min: "0", max: "100", step: "1", value: "0",
      onchange: (ev) => { S.whiteBelow = Math.min(Math.max(+ev.target.value || 0, 0), 100); repaint(); }});
    return el("label", {class: "legend"}, "white below ", white, " % of the scale");
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

  // ---- charts (plotly.js), drawn when their tab opens --------------------
  // Nothing in a chart may reach the network (the page is often opened from disk on a cluster) nor send
  // the data anywhere: plotly.js shows a "Share chart..." button (uploads the chart, names and values, to
  // Plotly Cloud) unless showSendToCloud is false, and a "Produced with Plotly.js" logo linking to
  // plotly.com unless displaylogo is false; with no plotlyServerURL, no button could find a destination.
  // The modebar keeps what stays in the browser (zoom, pan, reset, download as PNG).
  const PLOT_CONFIG = {displaylogo: false, showSendToCloud: false, plotlyServerURL: "",
    responsive: true};
  // plotly.js reads a subset of HTML in every string it draws (<b>, <i>, <br>, <a href=...>, <span style>):
  // a function named main<b> would be drawn bold, and an <a href> in a name would become a live link.  Every
  // name handed to plotly is escaped (plotly turns &lt; &gt; &amp; and numeric references back into the characters;
  // it knows no &quot;).
  const ESC = {"&": "&amp;", "<": "&lt;", ">": "&gt;", "\"": "&#34;", "'": "&#39;"};
  const esc = (s) => String(s).replace(/[&<>"']/g, (c) => ESC[c]);
  // plotly.js is in the page as text (page.py): run it the first time a chart is drawn
  function plotly() {
    if (!window.Plotly) {
      const s = document.createElement("script");
      s.textContent = document.getElementById("psuite-plotly").textContent;
      document.head.append(s);
    }
    return window.Plotly;
  }
  const metricName = () => (S.metric < 0 ? "" : metrics[S.metric].display);
  const tabs = {};
  function dirty() { for (const t of Object.values(tabs)) if (t.chart) t.drawn = false; const a = activeTab(); if (a) a.draw(); }
  function activeTab() { return Object.values(tabs).find((t) => t.box.style.display !== "none" && t.chart); }

  const FLAME_MIN = 0.001; // least share of the total a block of the icicle needs
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
    // plotly's "total" branch values: each node's inclusive value, non-negative
    // (a difference's magnitudes, coloured by sign), recomputed here so that
    // every parent holds at least the sum of its children
    const own = new Float64Array(NC);
    for (let c = 0; c < NC; c++) { const v = d.excT[c]; own[c] = v === v ? Math.abs(v) : 0; }
    const tot = Float64Array.from(own);
    for (let c = NC - 1; c >= 0; c--) if (parent[c] >= 0) tot[parent[c]] += tot[c];
    // blocks narrower than a pixel or so are left out (plotly draws every node
    // it is given: 2,000 take seconds); their parents keep their totals
    let all = 0;
    for (const r of roots) all += tot[r];
    const keep = new Uint8Array(NC);
    let kept = 0;
    for (let c = 0; c < NC; c++) {
      keep[c] = (parent[c] < 0 || keep[parent[c]]) && tot[c] >= all * FLAME_MIN ? 1 : 0;
      kept += keep[c];
    }
    const ids = [], labels = [], parents = [], values = [], colours = [];
    for (let c = 0; c < NC; c++) {
      if (!keep[c]) continue;
      ids.push(String(c));
      labels.push(esc(V.regions[regionOf[c]].name));
      parents.push(parent[c] < 0 ? "" : String(parent[c]));
      values.push(tot[c]);
      colours.push(d.incT[c] || 0);
    }
    const trace = {type: "icicle", ids, labels, parents, values, branchvalues: "total",
      tiling: {orientation: "v", flip: "y"}, hovertemplate: "%{label}<br>%{value}<extra></extra>",
      marker: DIFF ? {colors: colours, colorscale: [[0, "rgb(0,150,0)"], [0.5, "#fff"], [1, "rgb(200,0,0)"]],
        cmid: 0, showscale: true} : {colors: colours, colorscale: "YlOrRd", reversescale: true, showscale: true}};
    const div = el("div", {class: "plot", id: "flame-plot"});
    box.append(el("p", {class: "note", text: "Icicle of the call tree (" + shownName
      + (DIFF ? ": sizes are magnitudes, colour the signed change" : "") + "). Click a block to zoom in."
      + (kept < NC ? " " + (NC - kept) + " call paths under " + FLAME_MIN * 100 + " % of the total are left out." : "")}), div);
    plotly().newPlot(div, [trace], {margin: {t: 10, l: 10, r: 10, b: 10}, height: 560}, PLOT_CONFIG);
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
        return {name: withUnit(m) + overLabel(m), per, event: m.summable && !SECONDS.includes(m.unit), over: m.over};
      });
    }
    if (S.metric < 0) return [];
    const d = curData();
    const NR = V.regions.length;
    const per = new Float64Array(NR * NL);
    for (let c = 0; c < NC; c++) {
      const rb = regionOf[c] * NL, cb = c * NL;
      for (let l = 0; l < NL; l++) { const v = d.exc[cb + l]; if (v === v) per[rb + l] += v; }
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

  function drawCharts(box) {
    box.textContent = "";
    const locLabels = V.locations.map((l) => l.label || "rank " + l.rank + " thread " + l.thread);
    const cols = columns();
    if (V.kind === "counts") {
      // events (counts) in one chart, times and derived metrics (ratios, rates)
      // in another: bars with their values written, a log axis where all are positive
      const events = cols.filter((c) => c.event), others = cols.filter((c) => !c.event);
      const value = (c) => aggregate(c.per, 0, c.per.length, c.over);
      const bars = (id, title, list, colour) => {
        const div = el("div", {class: "plot", id});
        box.append(el("h3", {text: title}), div);
        const x = list.map(value);
        const log = x.every((v) => v > 0) && Math.max(...x) / Math.min(...x) > 100;
        plotly().newPlot(div, [{type: "bar", orientation: "h", y: list.map((c) => esc(c.name)), x,
          text: x.map((v) => fmt(v)), textposition: "auto", hovertemplate: "%{y}: %{text}<extra></extra>",
          marker: {color: DIFF ? x.map((v) => (v < 0 ? "rgb(40,170,40)" : "rgb(230,60,60)")) : colour}}],
        {xaxis: {type: log ? "log" : "linear"}, yaxis: {automargin: true, autorange: "reversed"},
          margin: {t: 10, r: 20}, height: 120 + 32 * list.length}, PLOT_CONFIG);
      };
      if (events.length) bars("counts-plot", "Event counts" + (NL > 1 ? " (all " + NL + " locations)" : ""), events, "#36c");
      if (others.length) {
        bars("derived-plot", "Times and derived metrics" + (NL > 1 ? " (over the locations: summed, or as marked)" : ""),
          others, "#d62");
      }
    } else if (NL === 1 && cols.length) {
      const top = cols.slice(0, 30);
      const div = el("div", {class: "plot", id: "regions-plot"});
      box.append(el("h3", {text: metricName() + " per function (exclusive, top " + top.length + ")"}), div);
      plotly().newPlot(div, [{type: "bar", x: top.map((c) => esc(c.name)), y: top.map((c) => c.per[0]),
        marker: {color: DIFF ? top.map((c) => (c.per[0] < 0 ? "green" : "red")) : "#36c"}}],
      {margin: {t: 10, b: 140}, height: 400}, PLOT_CONFIG);
    }
    if (NL > 1 && cols.length) {
      const top = V.kind === "counts" ? cols : cols.slice(0, 40);
      const scaled = V.kind === "counts"; // different events: each column relative to its mean
      const z = [], text = [];
      const means = top.map((c) => aggregate(c.per, 0, NL, "mean")); // once per column, not per cell
      for (let l = 0; l < NL; l++) {
        z.push(top.map((c, j) => {
          const v = c.per[l];
          if (!scaled) return v === v ? v : null;
          return v === v && means[j] ? v / means[j] : null;
        }));
        text.push(top.map((c) => fmt(c.per[l])));
      }
      const hm = el("div", {class: "plot", id: "heatmap-plot"});
      box.append(el("h3", {text: "Heat map: locations x " + (V.kind === "counts" ? "events (value / mean)"
        : "regions (" + metricName() + ", exclusive, top " + top.length + ")")}), hm);
      plotly().newPlot(hm, [{type: "heatmap", z, x: top.map((c) => esc(c.name)), y: locLabels.map(esc), text,
        hovertemplate: "%{y}<br>%{x}<br>%{text}<extra></extra>",
        colorscale: DIFF ? [[0, "rgb(0,150,0)"], [0.5, "#fff"], [1, "rgb(200,0,0)"]] : "Portland",
        zmid: DIFF ? 0 : undefined}],
      {margin: {t: 10, b: 140, l: 140}, height: Math.min(900, 200 + 12 * NL)}, PLOT_CONFIG);

      const boxes = top.slice(0, 25);
      const bp = el("div", {class: "plot", id: "boxplot-plot"});
      box.append(el("h3", {text: "Box plots across locations, with the imbalance (max / mean)"}), bp);
      plotly().newPlot(bp, boxes.map((c) => ({type: "box", name: esc(c.name) + " (" + imbalance(c.per).toFixed(2) + "x)",
        y: Array.from(c.per), boxpoints: "all", jitter: 0.3, pointpos: 0, text: locLabels.map(esc)})),
      {showlegend: false, margin: {t: 10, b: 160}, height: 460}, PLOT_CONFIG);

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
    if (!box.children.length) box.append(el("p", {class: "note", text: "No chart for this data."}));
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
      for (let i = 0; i <= 8; i++) bar.append(el("span", {class: "sq", style: "background:" + colour(i, 8)}));
      bar.append(" high");
      header.append(bar);
    } else {
      header.append(el("span", {class: "legend", id: "diff-legend"},
        el("span", {class: "sq", style: "background:rgb(40,170,40)"}), " less (a gain)  ",
        el("span", {class: "sq", style: "background:rgb(230,60,60)"}), " more (a loss)"));
    }
    header.append(thresholdControl());
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
        if (chart) for (const p of box.querySelectorAll(".js-plotly-plot")) plotly().Plots.resize(p);
      }});
      bar.append(button);
      body.append(box);
      return t;
    }
    const trees = tab("trees", "Trees", (box) => { box.append(buildPanes(), sourceBox); showSource(); }, false);
    if (V.kind !== "counts" && NC > 1) tab("flame", "Flame graph", drawFlame, true);
    tab("charts", "Charts", drawCharts, true);
    tab("context", "Context", buildContext, false);
    document.body.append(header, bar, body);
    bar.firstChild.click();
    void trees;
    window.psuiteReady = performance.now();
  }
  main();
})();
