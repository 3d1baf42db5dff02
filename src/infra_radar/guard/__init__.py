"""Guards on what a user gives the radar: files opened without blocking, checked and capped (`files`), and rule
patterns read for backtracking before they are used (`patterns`)."""
