"""The planning face: scenario files, sweeps, plots, model fitting and the USL."""
