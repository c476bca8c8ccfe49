"""Attachments: the files, images and voice that people send with their messages."""
