"""What can be measured: workloads, load generators and the thresholds every verdict uses."""
