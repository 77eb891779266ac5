"""What a run is and what it produced, as the store keeps them: its configuration and identity,
where its agents ran (provenance), and one record per trial.

The store, the runner, reports and exports all read these types, so they sit below all of them
and import nothing above the agents' registry."""
