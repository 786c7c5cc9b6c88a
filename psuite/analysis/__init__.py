"""Computation on the model, below every command line: reading any input
into it (inputs, prepare, experiments), derived metrics (metrics,
calibrate), resolving addresses to functions and lines (calltree_resolve,
srcmap), combining and statistics (combine, stat), CUBE's algebra and
CubeLib's tools' computations (algebra, remap), and the views CUBE shows
(experiment_views, dump)."""
