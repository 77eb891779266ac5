"""castbench's authoring tools, a satellite of the core (no extra: it ships in castbench's wheel):

- `castbench domains new NAME` (`castbench_authoring.template`, `castbench.new_domain`): a working
  domain pack copied from the template under `domain-template/` (package data);
- generating a domain's task splits (`castbench_authoring.generation`: `Generator`, the drafts and
  families a pack's `generate.py` declares) and the false claims its records rule out
  (`castbench_authoring.claims`), read through `castbench.domain`;
- `castbench tasks generate` (`castbench_authoring.private`, `castbench.generate_private`): a
  private test split.

The commands come in through the `castbench.commands` entry point (`domains.new`,
`tasks.generate`: subcommands of the core's groups). Checking a domain's tasks and a private
split's file (`domains validate`, `castbench_authoring.validate`) stays in the core: this package
uses it, the core names nothing here.
"""
