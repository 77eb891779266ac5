"""Comparing two runs task by task, and the CI regression gate built on that comparison.

Import each name from the module that defines it (`castbench._results.compare.gate`, `.runs`, `.sources`,
`.comparability`, ...): this package imports none of them, so that a command's help, or the gate's
option choices (`castbench._results.compare.undecided`), load nothing of the store or the statistics."""
