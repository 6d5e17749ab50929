"""``semspec demo``: two scripted tasks on a throwaway sample project, on the embedded stack.

``story`` holds the sample project and the two tasks' scripts, ``sample`` writes the repository,
``stack`` starts the services, ``follow`` watches a running task, ``summary`` records what
happened and ``run`` tells the story end to end.
"""
