"""Landing approved work on its base branch: git steps, gates on the result, one queue per base."""
