# pulse-eval-score's strict rules on hand-written runs (tools/eval/score.c;
# the binary's rule is in analyzer/analyzer.mk).
TEST_SCRIPTS += tests/analyzer/score_strict.sh
test: $(BUILD)/bin/pulse-eval-score
