/* The part of libibverbs' ABI (rdma-core infiniband/verbs.h, stable since
 * IBVERBS_1.1) that the hook reads, declared here so that the build needs no
 * rdma-core headers. Only leading members that have never moved. */
#ifndef PULSE_VERBS_ABI_H
#define PULSE_VERBS_ABI_H

#include <stdint.h>

#define PULSE_IBV_SYSFS_NAME_MAX 64

struct ibv_device {
	void *ops_[2];                 /* struct _ibv_device_ops */
	int node_type;
	int transport_type;
	char name[PULSE_IBV_SYSFS_NAME_MAX];
	/* ... */
};

struct ibv_context {
	struct ibv_device *device;
	/* ... */
};

struct ibv_qp {
	struct ibv_context *context;
	void *qp_context;
	void *pd, *send_cq, *recv_cq, *srq;
	uint32_t handle;
	uint32_t qp_num;
	int state;
	int qp_type;
	/* ... */
};

union ibv_gid {
	uint8_t raw[16];
	struct {
		uint64_t subnet_prefix;
		uint64_t interface_id;
	} global;
};

struct ibv_global_route {
	union ibv_gid dgid;
	uint32_t flow_label;
	uint8_t sgid_index;
	uint8_t hop_limit;
	uint8_t traffic_class;
};

struct ibv_ah_attr {
	struct ibv_global_route grh;
	uint16_t dlid;
	uint8_t sl;
	uint8_t src_path_bits;
	uint8_t static_rate;
	uint8_t is_global;
	uint8_t port_num;
};

struct ibv_qp_cap {
	uint32_t max_send_wr, max_recv_wr, max_send_sge, max_recv_sge, max_inline_data;
};

struct ibv_qp_attr {
	int qp_state;
	int cur_qp_state;
	int path_mtu;
	int path_mig_state;
	uint32_t qkey;
	uint32_t rq_psn;
	uint32_t sq_psn;
	uint32_t dest_qp_num;
	unsigned int qp_access_flags;
	struct ibv_qp_cap cap;
	struct ibv_ah_attr ah_attr;
	struct ibv_ah_attr alt_ah_attr;
	uint16_t pkey_index;
	/* ... more members follow; the hook never reads past ah_attr */
};

struct ibv_pd;
struct ibv_qp_init_attr;

#define PULSE_IBV_QP_STATE (1 << 0)
#define PULSE_IBV_QP_AV (1 << 7)
#define PULSE_IBV_QP_DEST_QPN (1 << 20)
#define PULSE_IBV_QPS_RTR 2

_Static_assert(__builtin_offsetof(struct ibv_qp_attr, dest_qp_num) == 28, "verbs ABI");
_Static_assert(__builtin_offsetof(struct ibv_qp_attr, ah_attr) == 56, "verbs ABI");
_Static_assert(sizeof(struct ibv_ah_attr) == 32, "verbs ABI");
_Static_assert(__builtin_offsetof(struct ibv_qp, qp_num) == 52, "verbs ABI");
_Static_assert(__builtin_offsetof(struct ibv_device, name) == 24, "verbs ABI");

#endif
