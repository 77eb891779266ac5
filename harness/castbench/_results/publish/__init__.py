"""Publishing runs: their import, what a board is (its file: `board`, which `eval --suite` reads
too) and `verify`. Building boards and the run viewer are the boards satellite's
(`castbench_boards`); Inspect logs the bridges' (`castbench_bridges`): their old modules here
warn and give the moved ones until castbench 0.2.0."""
