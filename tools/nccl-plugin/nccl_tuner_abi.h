/* The binary interface between NCCL and an external tuner plugin, declared from NCCL's published
 * interface (versions 2 to 7) so the plugin builds without NCCL installed. NCCL finds the plugin
 * by dlopen()ing libnccl-tuner-NAME.so (NCCL_TUNER_PLUGIN=NAME) and looks up one data symbol per
 * version, newest first: ncclTunerPlugin_v7, _v6, ... _v2. Every layout here must stay exactly as
 * NCCL reads it: field order and types are the contract, names are ours. */
#ifndef ACCELTUNE_NCCL_TUNER_ABI_H
#define ACCELTUNE_NCCL_TUNER_ABI_H

#include <stddef.h>
#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

/* NCCL's ncclResult_t: an int-sized enum; a tuner only ever needs success. */
typedef enum { acc_ncclSuccess = 0, acc_ncclInternalError = 3, acc_ncclInvalidArgument = 4 } acc_ncclResult_t;

typedef enum {
  ACC_NCCL_LOG_NONE = 0,
  ACC_NCCL_LOG_VERSION = 1,
  ACC_NCCL_LOG_WARN = 2,
  ACC_NCCL_LOG_INFO = 3,
  ACC_NCCL_LOG_ABORT = 4,
  ACC_NCCL_LOG_TRACE = 5
} acc_ncclDebugLogLevel;

/* The subsystem flag NCCL's own tuning messages use (NCCL_DEBUG_SUBSYS=TUNING). */
#define ACC_NCCL_SUBSYS_INIT 0x1UL
#define ACC_NCCL_SUBSYS_TUNING 0x40UL

typedef void (*acc_ncclDebugLogger_t)(acc_ncclDebugLogLevel level, unsigned long flags, const char* file, int line,
                                      const char* fmt, ...);

/* NCCL's ncclFunc_t, as passed to getCollInfo. */
typedef enum {
  acc_ncclFuncBroadcast = 0,
  acc_ncclFuncReduce = 1,
  acc_ncclFuncAllGather = 2,
  acc_ncclFuncReduceScatter = 3,
  acc_ncclFuncAllReduce = 4,
  acc_ncclFuncSendRecv = 5,
  acc_ncclFuncSend = 6,
  acc_ncclFuncRecv = 7,
  acc_ncclFuncAlltoAll = 8,
  acc_ncclFuncScatter = 9,
  acc_ncclFuncGather = 10,
  acc_ncclFuncAllGatherV = 11,
  acc_ncclNumFuncs = 15
} acc_ncclFunc_t;

/* Rows of the cost table: algorithms. */
#define ACC_NCCL_ALGO_UNDEF (-1)
#define ACC_NCCL_ALGO_TREE 0
#define ACC_NCCL_ALGO_RING 1
#define ACC_NCCL_ALGO_COLLNET_DIRECT 2
#define ACC_NCCL_ALGO_COLLNET_CHAIN 3
#define ACC_NCCL_ALGO_NVLS 4
#define ACC_NCCL_ALGO_NVLS_TREE 5
#define ACC_NCCL_ALGO_PAT 6
#define ACC_NCCL_NUM_ALGORITHMS 7

/* Columns of the cost table: protocols. */
#define ACC_NCCL_PROTO_UNDEF (-1)
#define ACC_NCCL_PROTO_LL 0
#define ACC_NCCL_PROTO_LL128 1
#define ACC_NCCL_PROTO_SIMPLE 2
#define ACC_NCCL_NUM_PROTOCOLS 3

/* A cost entry NCCL has ruled out for this call; it must never be made eligible. */
#define ACC_NCCL_ALGO_PROTO_IGNORE (-1.0f)

/* v2: NCCL asks for an algorithm and protocol directly. */
typedef struct {
  const char* name;
  acc_ncclResult_t (*init)(size_t nRanks, size_t nNodes, acc_ncclDebugLogger_t logFunction, void** context);
  acc_ncclResult_t (*getCollInfo)(void* context, acc_ncclFunc_t collType, size_t nBytes, int collNetSupport,
                                  int nvlsSupport, int numPipeOps, int* algorithm, int* protocol, int* nChannels);
  acc_ncclResult_t (*destroy)(void* context);
} acc_ncclTuner_v2_t;

/* v3: the plugin edits NCCL's cost table, float[numAlgo][numProto] passed as float**;
 * NCCL picks the cheapest entry, so a zero cost chooses that pair. */
typedef struct {
  const char* name;
  acc_ncclResult_t (*init)(size_t nRanks, size_t nNodes, acc_ncclDebugLogger_t logFunction, void** context);
  acc_ncclResult_t (*getCollInfo)(void* context, acc_ncclFunc_t collType, size_t nBytes, int numPipeOps,
                                  float** collCostTable, int numAlgo, int numProto, int* nChannels);
  acc_ncclResult_t (*destroy)(void* context);
} acc_ncclTuner_v3_t;

/* v4: adds whether the user buffers are registered. */
typedef struct {
  const char* name;
  acc_ncclResult_t (*init)(size_t nRanks, size_t nNodes, acc_ncclDebugLogger_t logFunction, void** context);
  acc_ncclResult_t (*getCollInfo)(void* context, acc_ncclFunc_t collType, size_t nBytes, int numPipeOps,
                                  float** collCostTable, int numAlgo, int numProto, int regBuff, int* nChannels);
  acc_ncclResult_t (*destroy)(void* context);
} acc_ncclTuner_v4_t;

/* v5: init gains the communicator id, NVLink domain facts and NCCL's tuning constants
 * (which this plugin leaves alone); destroy is called finalize. */
typedef struct {
  int nNvlDomains;
  int minRanksPerNvlDomain;
  int maxRanksPerNvlDomain;
} acc_ncclNvlDomainInfo_v5_t;

#define ACC_NCCL_V5_NUM_ALGORITHMS 7
#define ACC_NCCL_V5_NUM_PROTOCOLS 3
#define ACC_NCCL_V5_NUM_HW_LINKS 3
#define ACC_NCCL_V5_NUM_COMPCAPS 4
#define ACC_NCCL_V5_NUM_TUNING_SCALES 3

typedef struct {
  double baseLatencies[ACC_NCCL_V5_NUM_ALGORITHMS][ACC_NCCL_V5_NUM_PROTOCOLS];
  double hwLatencies[ACC_NCCL_V5_NUM_HW_LINKS][ACC_NCCL_V5_NUM_ALGORITHMS][ACC_NCCL_V5_NUM_PROTOCOLS];
  double llMaxBws[ACC_NCCL_V5_NUM_COMPCAPS][ACC_NCCL_V5_NUM_TUNING_SCALES];
  double perChMaxRingLL128Bws[ACC_NCCL_V5_NUM_COMPCAPS][ACC_NCCL_V5_NUM_TUNING_SCALES];
  double perChMaxTreeLL128Bws[ACC_NCCL_V5_NUM_COMPCAPS][ACC_NCCL_V5_NUM_TUNING_SCALES];
  double perChMaxTreeBws[ACC_NCCL_V5_NUM_COMPCAPS][ACC_NCCL_V5_NUM_TUNING_SCALES];
  double perChMaxNVLSTreeBws[ACC_NCCL_V5_NUM_COMPCAPS][ACC_NCCL_V5_NUM_TUNING_SCALES];
} acc_ncclTunerConstants_v5_t;

typedef struct {
  const char* name;
  acc_ncclResult_t (*init)(void** context, uint64_t commId, size_t nRanks, size_t nNodes,
                           acc_ncclDebugLogger_t logFunction, acc_ncclNvlDomainInfo_v5_t* nvlDomainInfo,
                           acc_ncclTunerConstants_v5_t* constants);
  acc_ncclResult_t (*getCollInfo)(void* context, acc_ncclFunc_t collType, size_t nBytes, int numPipeOps,
                                  float** collCostTable, int numAlgo, int numProto, int regBuff, int* nChannels);
  acc_ncclResult_t (*finalize)(void* context);
} acc_ncclTuner_v5_t;

/* v6: v5 plus an optional chunk-size override, called after the choice is made. */
typedef acc_ncclNvlDomainInfo_v5_t acc_ncclNvlDomainInfo_v6_t;
typedef acc_ncclTunerConstants_v5_t acc_ncclTunerConstants_v6_t;

typedef struct {
  const char* name;
  acc_ncclResult_t (*init)(void** context, uint64_t commId, size_t nRanks, size_t nNodes,
                           acc_ncclDebugLogger_t logFunction, acc_ncclNvlDomainInfo_v6_t* nvlDomainInfo,
                           acc_ncclTunerConstants_v6_t* constants);
  acc_ncclResult_t (*getCollInfo)(void* context, acc_ncclFunc_t collType, size_t nBytes, int numPipeOps,
                                  float** collCostTable, int numAlgo, int numProto, int regBuff, int* nChannels);
  acc_ncclResult_t (*finalize)(void* context);
  acc_ncclResult_t (*getChunkSize)(void* context, acc_ncclFunc_t collType, size_t nBytes, int algorithm, int protocol,
                                   int nChannels, size_t* chunkSize);
} acc_ncclTuner_v6_t;

/* v7: the tuning constants gain a fifth compute-capability row; the functions keep v6's shape. */
typedef acc_ncclNvlDomainInfo_v5_t acc_ncclNvlDomainInfo_v7_t;
#define ACC_NCCL_V7_NUM_COMPCAPS 5

typedef struct {
  double baseLatencies[ACC_NCCL_V5_NUM_ALGORITHMS][ACC_NCCL_V5_NUM_PROTOCOLS];
  double hwLatencies[ACC_NCCL_V5_NUM_HW_LINKS][ACC_NCCL_V5_NUM_ALGORITHMS][ACC_NCCL_V5_NUM_PROTOCOLS];
  double llMaxBws[ACC_NCCL_V7_NUM_COMPCAPS][ACC_NCCL_V5_NUM_TUNING_SCALES];
  double perChMaxRingLL128Bws[ACC_NCCL_V7_NUM_COMPCAPS][ACC_NCCL_V5_NUM_TUNING_SCALES];
  double perChMaxTreeLL128Bws[ACC_NCCL_V7_NUM_COMPCAPS][ACC_NCCL_V5_NUM_TUNING_SCALES];
  double perChMaxTreeBws[ACC_NCCL_V7_NUM_COMPCAPS][ACC_NCCL_V5_NUM_TUNING_SCALES];
  double perChMaxNVLSTreeBws[ACC_NCCL_V7_NUM_COMPCAPS][ACC_NCCL_V5_NUM_TUNING_SCALES];
} acc_ncclTunerConstants_v7_t;

typedef struct {
  const char* name;
  acc_ncclResult_t (*init)(void** context, uint64_t commId, size_t nRanks, size_t nNodes,
                           acc_ncclDebugLogger_t logFunction, acc_ncclNvlDomainInfo_v7_t* nvlDomainInfo,
                           acc_ncclTunerConstants_v7_t* constants);
  acc_ncclResult_t (*getCollInfo)(void* context, acc_ncclFunc_t collType, size_t nBytes, int numPipeOps,
                                  float** collCostTable, int numAlgo, int numProto, int regBuff, int* nChannels);
  acc_ncclResult_t (*finalize)(void* context);
  acc_ncclResult_t (*getChunkSize)(void* context, acc_ncclFunc_t collType, size_t nBytes, int algorithm, int protocol,
                                   int nChannels, size_t* chunkSize);
} acc_ncclTuner_v7_t;

#ifdef __cplusplus
}
#endif

#endif
