"""Integrations of code_gym and credit with distributed RL trainers."""
