"""The analysis model, without I/O: CUBE's performance space (experiment:
metric tree x call tree x system tree, values per call path and location;
cubepl evaluates its derived metrics) and the PerfSuite document model
(report: counting reports and flat profiles per process and thread;
calltree: call paths) that the PerfSuite formats read and write."""
