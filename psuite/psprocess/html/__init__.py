"""psprocess's HTML report: one self-contained page (no network, no
server) showing any input psuite reads, or any result of the algebra, in
CUBE's three coupled panes with a source view, a flame graph and charts.

Two halves meet at one JSON document, the *view*:
- `viewdoc.build(...)` (Python) turns Experiments and reports into it;
- `page.render(view)` embeds it with the page's script and style into one
  HTML file; the script (app.js) draws everything from the view alone,
  its charts too (SVG of its own: no chart library in the page).

The view (version 1; every key present, lists may be empty):

  {"psuite_view": 1,
   "title": str,                        # the page's heading, e.g. the command
   "kind": "counts" | "profile" | "calltree" | "difference" | "cube",
                                        # counts: counting reports, and results of the algebra
                                        # made of counting reports alone (a difference too)
   "difference": bool,                  # values are gains and losses (two colours)
   "context": [[label, value], ...],    # machine, host, command, date, ranks, threads ...
   "dropped": [{"event": str, "why": str}],   # events asked for but not measured
   "metrics": [{"name": str, "display": str, "unit": str, "description": str,
                                        # unit: CUBE's ("sec", "occ" ...), or where "occ" would hide
                                        # it the metric's own: "%", "/s" (a rate), "ns" (perf's clocks)
                "parent": int | null,   # index in this list: the metric tree
                "integer": bool, "derived": bool,
                "over": "sum" | "mean" | "max" | "min"}],  # over locations (ranks, threads): a
                                        # wall clock the longest rank's, CPU time the sum, ratios
                                        # the mean (absent: sum, or mean for derived metrics)
   "regions": [{"name": str, "module": str, "file": str | null, "line": int | null}],
                                        # file: the source file as sources[].file names it (null
                                        # when unknown); module: the object file where known
   "cnodes": {"region": [int, ...],     # per cnode: index in regions
              "parent": [int, ...],     # per cnode: parent cnode, -1 for a root; parents come first
              "line": [int, ...]},      # per cnode: call-site line, -1 unknown
   "locations": [{"machine": str, "node": str, "rank": int, "thread": int, "label": str}],
                                        # machine: a report's is the hosts' domain, else the
                                        # host, else "N hosts"
   "values": {metric name: {
       "exclusive": CELLS,              # the (cnode, location) cells, row-major: len(cnodes) * len(locations)
       "inclusive": CELLS | null        # given for derived metrics (ratios do not add up) and
                                        # least/greatest metrics (CUBE's MIN/MAXDOUBLE); else
                                        # the page sums exclusive values up the tree
   }},
   "statistics": [{"pattern": str,      # a CUBE statistics file's patterns (.stat: the CUBE file's own
                   "metric": int | null,  # beside it, or psprocess --stat): the metric of this list
                   "metric_id": int,      # it names (by name), and its id in the CUBE file
                   "count": int,          # instances
                   "figures": {str: float},  # those given of mean, median, minimum, maximum, sum,
                                          # variance, q1, q3
                   "instances": [[cnode id in the CUBE file, enter, exit, duration], ...]}],
                                          # the most severe instances
   "sources": [{"file": str,            # as the profile names it
                "path": str | null,     # where it was read; null when unreadable (then no lines)
                "lines": [str, ...],    # the file's text, line 1 first
                "samples": {"LINE": int},   # samples per line number (string keys: JSON)
                "total": int,           # the profile's samples in all, for percentages
                "note": str}],          # "" or why lines are missing or cut (too large, not found)
                                        # a difference's samples are gains and losses per line
                                        # (negative too; total: the subtrahend's), a mean's may
                                        # be fractional; results of merge, mean, cut and CUBE
                                        # files are kind "cube" (of counting reports: "counts")
   "external": null | {"name": str,     # a difference's subtrahend (where read from PerfSuite
                "totals": {metric name: float}}}  # documents): each metric's value over its root
                                        # call paths and locations, 100 % of the external percent mode

CELLS: the non-zero cells alone (a sampled run is non-zero on a few
percent of them), base64 of little-endian bytes:

  {"n": int,                            # cells in all
   "at": str,                           # the non-zero cells' positions as LEB128 varints, each the
                                        # number of cells skipped since the last one (the first: from 0)
   "int": str | "f32": str | "f64": str,  # their values, in order: whole numbers as zigzag LEB128
                                        # varints, else float32 where every value is one exactly, else
                                        # float64
   "null": str}                         # (when any) the cells that hold no number (NaN or inf in the
                                        # input), as "at": the page shows "-" and leaves them out of
                                        # sums and charts

or, in a view written by hand, the plain list of the cells (null for no
number).  viewdoc.decode gives the plain list of either.

Counting reports are one root cnode per program with every event and
derived metric a metric (each run time once: experiments' wall_seconds
and cpu_seconds are left out where psmetrics' metrics repeat them); flat profiles are the program's root with one
child per function; call-path profiles the real tree.  A metric of a
counting report that psmetrics derived (a ratio, a rate) is "derived"
even when its values are stored: the page must not sum it over ranks.
Integer metrics' values are ints; others are rounded to 12 significant
digits of the metric's largest value."""
