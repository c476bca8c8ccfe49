"""Attachments: files, images and voice messages read into text the Bot, search and memory use."""
