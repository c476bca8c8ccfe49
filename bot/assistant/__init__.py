"""The Bot: the one conversation the user sees. It reads its durable inbox, answers slash
commands without a model, and speaks only through send_user."""
