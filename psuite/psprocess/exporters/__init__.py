"""Exports to other tools' own formats, one module per format, each with
write(report, path) over the shared report model: gmon (GNU gprof)."""
