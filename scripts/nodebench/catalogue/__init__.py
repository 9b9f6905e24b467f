"""What can be measured: workloads, load generators, the baselines and the thresholds every verdict uses."""
