from aircli import dashboard as cli_dashboard
from dashboard import server


def test_the_cli_dashboard_defaults_are_the_dashboard_servers() -> None:
    assert cli_dashboard.DEFAULT_HOST == server.DEFAULT_HOST
    assert cli_dashboard.DEFAULT_PORT == server.DEFAULT_PORT
