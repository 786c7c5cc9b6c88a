"""Exports to other tools' own formats, one module per format, each with
write(report, path, module, force) over the shared report model: gmon (GNU
gprof's gmon.out), vprof (vmon.out version 4)."""
