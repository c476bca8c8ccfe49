"""The console channel: a small web page to chat with the bot without Feishu."""
