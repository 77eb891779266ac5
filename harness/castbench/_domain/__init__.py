"""A domain: its database, tools, tasks, facts and rules, the registry of packs, and what a pack
derives from its data and keeps."""
