from tests.feishu_world import fake  # noqa: F401  (fixture)
