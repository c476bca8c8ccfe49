"""Sign-in as the owner: the owner's Feishu user_access_token, got by OAuth, sealed at rest,
refreshed before it expires (issue #41)."""
