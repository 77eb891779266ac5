"""What is done with stored runs: reports and summaries, why trials failed (attribution), comparisons
and the regression gate, verification, export and import of runs."""
