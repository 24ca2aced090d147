"""Answer checks: what a model's answer says, judged against what the turn's tool results show."""
