"""Readers and writers of the PerfSuite XML formats, one module per format."""
