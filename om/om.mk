# om/: OpenMetrics text over HTTP (libmicrohttpd), shared by the daemons
# that serve /metrics: pulse-host-agent and pulse-analyzer
# (include/pulse/om.h). libpulse_om.a in all three builds; link with
# $(OM_LDLIBS).
OM_SRCS := om/om_text.c om/om_http.c
OM_LDLIBS := -lmicrohttpd
$(call static_lib,pulse_om,$(OM_SRCS),obj asan tsan)
