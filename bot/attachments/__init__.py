"""Attachments: reading what messages and mails carry (files, images, voice) into text that
the Bot's turn, search and memory can use (storage/repos/attachments.py tells the life of one)."""
