"""Exports to other tools' own formats, one module per format, each with
targets(path) (the files it will create, checked before anything is read)
and write(report, path, module, force) over the shared report model,
returning what it wrote in words: gmon (GNU gprof's gmon.out), vprof
(vmon.out version 4), cube (CUBE 4 .cubex and its statistics file; the real
call tree when the profiles have call paths), and for call paths folded
(folded stacks), speedscope (speedscope JSON) and pprof (profile.proto).
Files are written through cli_common.atomic_output(s): whole or not at all."""
