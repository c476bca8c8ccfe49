from tests.feishu_world import fake, make_world  # noqa: F401  (fixtures)
