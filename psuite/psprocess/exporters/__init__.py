"""Exports to other tools' own formats, one module per format, each with
write(report, path, module, force) over the shared report model, returning
what it wrote in words: gmon (GNU gprof's gmon.out), vprof (vmon.out
version 4), cube (CUBE 4 .cubex and its statistics file)."""
