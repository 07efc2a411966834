"""Properties over generated inputs (hypothesis) whose reference is the planner's own definition: the rules
against their fast forms, round trips."""
