# dashboards/: Grafana dashboards for the user's own Grafana (dashboards/README.md).
# Their every query is run against a test PostgreSQL and Prometheus:
TEST_SCRIPTS += tests/dashboards/dashboards.sh
