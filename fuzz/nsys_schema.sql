-- The Nsight Systems tables stallscope's reader looks at, as the corpus exports declare them
-- (../shared/corpus/nsys/sqlite; each from the newest export with the most columns, comments
-- dropped), one CREATE TABLE a line: fuzz/src/targets.rs builds the nsys target's databases.
-- CUPTI_ACTIVITY_KIND_KERNEL: nsysai_mfu_2xh100_after_nsys2026.2.sqlite
CREATE TABLE CUPTI_ACTIVITY_KIND_KERNEL (start INTEGER NOT NULL, end INTEGER NOT NULL, deviceId INTEGER NOT NULL, contextId INTEGER NOT NULL, greenContextId INTEGER, streamId INTEGER NOT NULL, correlationId INTEGER, globalPid INTEGER, demangledName INTEGER NOT NULL, shortName INTEGER NOT NULL, mangledName INTEGER, launchType INTEGER, cacheConfig INTEGER, registersPerThread INTEGER NOT NULL, gridX INTEGER NOT NULL, gridY INTEGER NOT NULL, gridZ INTEGER NOT NULL, blockX INTEGER NOT NULL, blockY INTEGER NOT NULL, blockZ INTEGER NOT NULL, staticSharedMemory INTEGER NOT NULL, dynamicSharedMemory INTEGER NOT NULL, localMemoryPerThread INTEGER NOT NULL, localMemoryTotal INTEGER NOT NULL, gridId INTEGER NOT NULL, sharedMemoryExecuted INTEGER, graphNodeId INTEGER, sharedMemoryLimitConfig INTEGER, qmdBulkReleaseDone INTEGER, qmdPreexitDone INTEGER, qmdLastCtaDone INTEGER, graphId INTEGER, clusterX INTEGER, clusterY INTEGER, clusterZ INTEGER, clusterSchedulingPolicy INTEGER, maxPotentialClusterSize INTEGER, maxActiveClusters INTEGER, sharedMemoryRequestedPercentage INTEGER, tensorSizeMinusOneElements TEXT NOT NULL)
-- CUPTI_ACTIVITY_KIND_MEMCPY: nsysai_mfu_2xh100_after_nsys2026.2.sqlite
CREATE TABLE CUPTI_ACTIVITY_KIND_MEMCPY (start INTEGER NOT NULL, end INTEGER NOT NULL, deviceId INTEGER NOT NULL, contextId INTEGER NOT NULL, greenContextId INTEGER, streamId INTEGER NOT NULL, correlationId INTEGER, globalPid INTEGER, bytes INTEGER NOT NULL, copyKind INTEGER NOT NULL, deprecatedSrcId INTEGER, srcKind INTEGER, dstKind INTEGER, srcDeviceId INTEGER, srcContextId INTEGER, dstDeviceId INTEGER, dstContextId INTEGER, migrationCause INTEGER, graphNodeId INTEGER, virtualAddress INTEGER, copyCount INTEGER)
-- CUPTI_ACTIVITY_KIND_MEMSET: nsysai_mfu_2xh100_after_nsys2026.2.sqlite
CREATE TABLE CUPTI_ACTIVITY_KIND_MEMSET (start INTEGER NOT NULL, end INTEGER NOT NULL, deviceId INTEGER NOT NULL, contextId INTEGER NOT NULL, greenContextId INTEGER, streamId INTEGER NOT NULL, correlationId INTEGER, globalPid INTEGER, value INTEGER NOT NULL, bytes INTEGER NOT NULL, graphNodeId INTEGER, memKind INTEGER)
-- CUPTI_ACTIVITY_KIND_OVERHEAD: nsysai_mfu_2xh100_after_nsys2026.2.sqlite
CREATE TABLE CUPTI_ACTIVITY_KIND_OVERHEAD (start INTEGER NOT NULL, end INTEGER NOT NULL, eventClass INTEGER NOT NULL, globalTid INTEGER, correlationId INTEGER, nameId INTEGER, overheadType INTEGER NOT NULL)
-- CUPTI_ACTIVITY_KIND_RUNTIME: pipit_saxpy-mpi-cuda_a100_nsys2022.2.sqlite
CREATE TABLE CUPTI_ACTIVITY_KIND_RUNTIME (start INTEGER NOT NULL, end INTEGER NOT NULL, eventClass INTEGER NOT NULL, globalTid INTEGER, correlationId INTEGER, nameId INTEGER NOT NULL REFERENCES StringIds(id), returnValue INTEGER NOT NULL, callchainId INTEGER REFERENCES CUDA_CALLCHAINS(id) , name TEXT)
-- CUPTI_ACTIVITY_KIND_SYNCHRONIZATION: nsysai_mfu_2xh100_after_nsys2026.2.sqlite
CREATE TABLE CUPTI_ACTIVITY_KIND_SYNCHRONIZATION (start INTEGER NOT NULL, end INTEGER NOT NULL, deviceId INTEGER NOT NULL, contextId INTEGER NOT NULL, greenContextId INTEGER, streamId INTEGER NOT NULL, correlationId INTEGER, globalPid INTEGER, deprecatedSyncType INTEGER, syncType INTEGER NOT NULL, eventId INTEGER NOT NULL, eventSyncId INTEGER)
-- GENERIC_EVENTS: generated_nvtx_nested_cpuonly_lazyfalse_fullschema_nsys2023.4.sqlite
CREATE TABLE GENERIC_EVENTS (rawTimestamp INTEGER NOT NULL, timestamp INTEGER, typeId INTEGER NOT NULL, data TEXT NOT NULL)
-- GPU_METRICS: generated_nvtx_nested_cpuonly_lazyfalse_fullschema_nsys2023.4.sqlite
CREATE TABLE GPU_METRICS (timestamp INTEGER, typeId INTEGER NOT NULL, metricId INTEGER NOT NULL, value INTEGER NOT NULL)
-- META_DATA_CAPTURE: nsysai_mfu_2xh100_after_nsys2026.2.sqlite
CREATE TABLE META_DATA_CAPTURE (name TEXT NOT NULL, value TEXT)
-- NVTX_EVENTS: nsysai_mfu_2xh100_after_nsys2026.2.sqlite
CREATE TABLE NVTX_EVENTS (start INTEGER NOT NULL, end INTEGER, eventType INTEGER NOT NULL, rangeId INTEGER, category INTEGER, color INTEGER, text TEXT, globalTid INTEGER, endGlobalTid INTEGER, textId INTEGER, domainId INTEGER, uint64Value INTEGER, int64Value INTEGER, doubleValue REAL, uint32Value INTEGER, int32Value INTEGER, floatValue REAL, jsonTextId INTEGER, jsonText TEXT, binaryData TEXT)
-- PROCESSES: nsysai_mfu_2xh100_after_nsys2026.2.sqlite
CREATE TABLE PROCESSES (globalPid INTEGER, pid INTEGER, name TEXT)
-- StringIds: nsysai_mfu_2xh100_after_nsys2026.2.sqlite
CREATE TABLE StringIds (id INTEGER NOT NULL PRIMARY KEY, value TEXT NOT NULL)
-- TARGET_INFO_CUDA_DEVICE: nsysai_mock_rtx3080_nsys2026.1.sqlite
CREATE TABLE TARGET_INFO_CUDA_DEVICE (gpuId INTEGER, cudaId INTEGER NOT NULL, pid INTEGER NOT NULL, uuid TEXT, numMultiprocessors INTEGER)
-- TARGET_INFO_GPU: nsysai_mock_rtx3080_nsys2026.1.sqlite
CREATE TABLE TARGET_INFO_GPU (vmId INTEGER NOT NULL, id INTEGER NOT NULL, name TEXT, busLocation TEXT, isDiscrete INTEGER, l2CacheSize INTEGER, totalMemory INTEGER, memoryBandwidth INTEGER, clockRate INTEGER, smCount INTEGER, pwGpuId INTEGER, uuid TEXT, luid INTEGER, chipName TEXT, cuDevice INTEGER, ctxswDevPath TEXT, ctrlDevPath TEXT, revision INTEGER, nodeMask INTEGER, constantMemory INTEGER, maxIPC INTEGER, maxRegistersPerBlock INTEGER, maxShmemPerBlock INTEGER, maxShmemPerBlockOptin INTEGER, maxShmemPerSm INTEGER, maxRegistersPerSm INTEGER, threadsPerWarp INTEGER, asyncEngines INTEGER, maxWarpsPerSm INTEGER, maxBlocksPerSm INTEGER, maxThreadsPerBlock INTEGER, maxBlockDimX INTEGER, maxBlockDimY INTEGER, maxBlockDimZ INTEGER, maxGridDimX INTEGER, maxGridDimY INTEGER, maxGridDimZ INTEGER, computeMajor INTEGER, computeMinor INTEGER, smMajor INTEGER, smMinor INTEGER)
-- TARGET_INFO_GPU_METRICS: generated_nvtx_nested_cpuonly_lazyfalse_fullschema_nsys2023.4.sqlite
CREATE TABLE TARGET_INFO_GPU_METRICS (typeId INTEGER NOT NULL, sourceId INTEGER NOT NULL, typeName TEXT NOT NULL, metricId INTEGER NOT NULL, metricName TEXT NOT NULL)
-- ThreadNames: nsysai_mfu_2xh100_after_nsys2026.2.sqlite
CREATE TABLE ThreadNames (nameId INTEGER NOT NULL, priority INTEGER, globalTid INTEGER)
-- CUPTI_ACTIVITY_KIND_GRAPH_TRACE is in no corpus export: the columns the reader selects,
-- typed as in the other CUPTI_ACTIVITY_KIND_* tables.
CREATE TABLE CUPTI_ACTIVITY_KIND_GRAPH_TRACE (start INTEGER NOT NULL, end INTEGER NOT NULL, deviceId INTEGER NOT NULL, contextId INTEGER NOT NULL, streamId INTEGER NOT NULL, correlationId INTEGER, globalPid INTEGER, graphId INTEGER NOT NULL, graphExecId INTEGER NOT NULL)
