"""What the CLI and the demo send to a stack: task and plan files, submitting, querying."""
