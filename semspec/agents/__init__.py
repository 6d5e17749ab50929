"""The agent loop for the developer and reviewer roles, their tools and providers' seams."""
