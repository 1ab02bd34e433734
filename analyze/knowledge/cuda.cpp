// CUDA: the driver API and runtime entry points nvtrace probes with uprobes, and the names of their results.
#include <algorithm>
#include <array>

#include <fmt/format.h>

#include "nvtrace/knowledge.hpp"

namespace nvtrace {

namespace {

using K = CudaArgKind;

// The prototypes are those of cuda.h and cuda_runtime_api.h of CUDA 13.0 (CUDA_VERSION 13000), read after the
// preprocessor with __CUDA_API_VERSION_INTERNAL defined, which declares every exported version of a function
// under its exported name (cuMemAlloc is the 32-bit CUDA 3.1 one, cuMemAlloc_v2 the one cuda.h maps cuMemAlloc
// to). Each entry's argument list follows its prototype, given beside it; the x86-64 System V ABI places them
// (integers and pointers in %di %si %dx %cx %r8 %r9, then $stack1...; a dim3 or CUmemLocation by value in
// registers, the second 32-bit field as bits 32..63). Which of them a library exports is checked when probes are
// planned, from its .dynsym; tests/tracer/test_uprobe_plan.cpp checks this table against the toolkit's headers.
constexpr std::array kCudaApis{
    // cuInit(unsigned int Flags)
    CudaApi{"cuInit", CudaLayer::driver, {{"Flags", "%di", "x32", K::flags}}},
    // cuDriverGetVersion(int *driverVersion)
    CudaApi{"cuDriverGetVersion", CudaLayer::driver, {{"driverVersion", "%di", "x64", K::address}}},
    // cuDeviceGet(CUdevice *device, int ordinal)
    CudaApi{
        "cuDeviceGet", CudaLayer::driver, {{"device", "%di", "x64", K::address}, {"ordinal", "%si", "s32", K::device}}},
    // cuDeviceGetCount(int *count)
    CudaApi{"cuDeviceGetCount", CudaLayer::driver, {{"count", "%di", "x64", K::address}}},
    // cuDeviceGetName(char *name, int len, CUdevice dev)
    CudaApi{"cuDeviceGetName",
            CudaLayer::driver,
            {{"name", "%di", "x64", K::address}, {"len", "%si", "s32", K::value}, {"dev", "%dx", "s32", K::device}}},
    // cuDeviceTotalMem_v2(size_t *bytes, CUdevice dev)
    CudaApi{"cuDeviceTotalMem_v2",
            CudaLayer::driver,
            {{"bytes", "%di", "x64", K::address}, {"dev", "%si", "s32", K::device}}},
    // cuDeviceGetAttribute(int *pi, CUdevice_attribute attrib, CUdevice dev)
    CudaApi{
        "cuDeviceGetAttribute",
        CudaLayer::driver,
        {{"pi", "%di", "x64", K::address}, {"attrib", "%si", "s32", K::enum_value}, {"dev", "%dx", "s32", K::device}}},
    // cuDevicePrimaryCtxRetain(CUcontext *pctx, CUdevice dev)
    CudaApi{"cuDevicePrimaryCtxRetain",
            CudaLayer::driver,
            {{"pctx", "%di", "x64", K::address}, {"dev", "%si", "s32", K::device}}},
    // cuDevicePrimaryCtxRelease_v2(CUdevice dev)
    CudaApi{"cuDevicePrimaryCtxRelease_v2", CudaLayer::driver, {{"dev", "%di", "s32", K::device}}},
    // cuDevicePrimaryCtxReset_v2(CUdevice dev)
    CudaApi{"cuDevicePrimaryCtxReset_v2", CudaLayer::driver, {{"dev", "%di", "s32", K::device}}},
    // cuDevicePrimaryCtxSetFlags_v2(CUdevice dev, unsigned int flags)
    CudaApi{"cuDevicePrimaryCtxSetFlags_v2",
            CudaLayer::driver,
            {{"dev", "%di", "s32", K::device}, {"flags", "%si", "x32", K::flags}}},
    // cuCtxCreate_v2(CUcontext *pctx, unsigned int flags, CUdevice dev)
    CudaApi{"cuCtxCreate_v2",
            CudaLayer::driver,
            {{"pctx", "%di", "x64", K::address}, {"flags", "%si", "x32", K::flags}, {"dev", "%dx", "s32", K::device}}},
    // cuCtxCreate_v3(CUcontext *pctx, CUexecAffinityParam *paramsArray, int numParams, unsigned int flags, CUdevice
    // dev)
    CudaApi{"cuCtxCreate_v3",
            CudaLayer::driver,
            {{"pctx", "%di", "x64", K::address},
             {"paramsArray", "%si", "x64", K::address},
             {"numParams", "%dx", "s32", K::value},
             {"flags", "%cx", "x32", K::flags},
             {"dev", "%r8", "s32", K::device}}},
    // cuCtxCreate_v4(CUcontext *pctx, CUctxCreateParams *ctxCreateParams, unsigned int flags, CUdevice dev)
    CudaApi{"cuCtxCreate_v4",
            CudaLayer::driver,
            {{"pctx", "%di", "x64", K::address},
             {"ctxCreateParams", "%si", "x64", K::address},
             {"flags", "%dx", "x32", K::flags},
             {"dev", "%cx", "s32", K::device}}},
    // cuCtxDestroy_v2(CUcontext ctx)
    CudaApi{"cuCtxDestroy_v2", CudaLayer::driver, {{"ctx", "%di", "x64", K::handle}}},
    // cuCtxSetCurrent(CUcontext ctx)
    CudaApi{"cuCtxSetCurrent", CudaLayer::driver, {{"ctx", "%di", "x64", K::handle}}},
    // cuCtxPushCurrent_v2(CUcontext ctx)
    CudaApi{"cuCtxPushCurrent_v2", CudaLayer::driver, {{"ctx", "%di", "x64", K::handle}}},
    // cuCtxPopCurrent_v2(CUcontext *pctx)
    CudaApi{"cuCtxPopCurrent_v2", CudaLayer::driver, {{"pctx", "%di", "x64", K::address}}},
    // cuCtxSynchronize(void)
    CudaApi{"cuCtxSynchronize", CudaLayer::driver, {}},
    // cuCtxSynchronize_v2(CUcontext ctx)
    CudaApi{"cuCtxSynchronize_v2", CudaLayer::driver, {{"ctx", "%di", "x64", K::handle}}},
    // cuMemGetInfo_v2(size_t *free, size_t *total)
    CudaApi{"cuMemGetInfo_v2",
            CudaLayer::driver,
            {{"free", "%di", "x64", K::address}, {"total", "%si", "x64", K::address}}},
    // cuMemAlloc(CUdeviceptr_v1 *dptr, unsigned int bytesize)
    CudaApi{
        "cuMemAlloc", CudaLayer::driver, {{"dptr", "%di", "x64", K::address}, {"bytesize", "%si", "u32", K::bytes}}},
    // cuMemAlloc_v2(CUdeviceptr *dptr, size_t bytesize)
    CudaApi{
        "cuMemAlloc_v2", CudaLayer::driver, {{"dptr", "%di", "x64", K::address}, {"bytesize", "%si", "u64", K::bytes}}},
    // cuMemAllocPitch_v2(CUdeviceptr *dptr, size_t *pPitch, size_t WidthInBytes, size_t Height, unsigned int
    // ElementSizeBytes)
    CudaApi{"cuMemAllocPitch_v2",
            CudaLayer::driver,
            {{"dptr", "%di", "x64", K::address},
             {"pPitch", "%si", "x64", K::address},
             {"WidthInBytes", "%dx", "u64", K::bytes},
             {"Height", "%cx", "u64", K::count},
             {"ElementSizeBytes", "%r8", "u32", K::bytes}}},
    // cuMemAllocManaged(CUdeviceptr *dptr, size_t bytesize, unsigned int flags)
    CudaApi{
        "cuMemAllocManaged",
        CudaLayer::driver,
        {{"dptr", "%di", "x64", K::address}, {"bytesize", "%si", "u64", K::bytes}, {"flags", "%dx", "x32", K::flags}}},
    // cuMemAllocHost_v2(void **pp, size_t bytesize)
    CudaApi{"cuMemAllocHost_v2",
            CudaLayer::driver,
            {{"pp", "%di", "x64", K::address}, {"bytesize", "%si", "u64", K::bytes}}},
    // cuMemAllocAsync(CUdeviceptr *dptr, size_t bytesize, CUstream hStream)
    CudaApi{"cuMemAllocAsync",
            CudaLayer::driver,
            {{"dptr", "%di", "x64", K::address},
             {"bytesize", "%si", "u64", K::bytes},
             {"hStream", "%dx", "x64", K::handle}}},
    // cuMemHostAlloc(void **pp, size_t bytesize, unsigned int Flags)
    CudaApi{
        "cuMemHostAlloc",
        CudaLayer::driver,
        {{"pp", "%di", "x64", K::address}, {"bytesize", "%si", "u64", K::bytes}, {"Flags", "%dx", "x32", K::flags}}},
    // cuMemFree(CUdeviceptr_v1 dptr)
    CudaApi{"cuMemFree", CudaLayer::driver, {{"dptr", "%di", "x32", K::device_address}}},
    // cuMemFree_v2(CUdeviceptr dptr)
    CudaApi{"cuMemFree_v2", CudaLayer::driver, {{"dptr", "%di", "x64", K::device_address}}},
    // cuMemFreeAsync(CUdeviceptr dptr, CUstream hStream)
    CudaApi{"cuMemFreeAsync",
            CudaLayer::driver,
            {{"dptr", "%di", "x64", K::device_address}, {"hStream", "%si", "x64", K::handle}}},
    // cuMemFreeHost(void *p)
    CudaApi{"cuMemFreeHost", CudaLayer::driver, {{"p", "%di", "x64", K::address}}},
    // cuMemHostRegister(void *p, size_t bytesize, unsigned int Flags)
    CudaApi{"cuMemHostRegister",
            CudaLayer::driver,
            {{"p", "%di", "x64", K::address}, {"bytesize", "%si", "u64", K::bytes}, {"Flags", "%dx", "x32", K::flags}}},
    // cuMemHostRegister_v2(void *p, size_t bytesize, unsigned int Flags)
    CudaApi{"cuMemHostRegister_v2",
            CudaLayer::driver,
            {{"p", "%di", "x64", K::address}, {"bytesize", "%si", "u64", K::bytes}, {"Flags", "%dx", "x32", K::flags}}},
    // cuMemHostUnregister(void *p)
    CudaApi{"cuMemHostUnregister", CudaLayer::driver, {{"p", "%di", "x64", K::address}}},
    // cuMemHostGetDevicePointer_v2(CUdeviceptr *pdptr, void *p, unsigned int Flags)
    CudaApi{"cuMemHostGetDevicePointer_v2",
            CudaLayer::driver,
            {{"pdptr", "%di", "x64", K::address}, {"p", "%si", "x64", K::address}, {"Flags", "%dx", "x32", K::flags}}},
    // cuMemcpy(CUdeviceptr dst, CUdeviceptr src, size_t ByteCount)
    CudaApi{"cuMemcpy",
            CudaLayer::driver,
            {{"dst", "%di", "x64", K::device_address},
             {"src", "%si", "x64", K::device_address},
             {"ByteCount", "%dx", "u64", K::bytes}}},
    // cuMemcpyAsync(CUdeviceptr dst, CUdeviceptr src, size_t ByteCount, CUstream hStream)
    CudaApi{"cuMemcpyAsync",
            CudaLayer::driver,
            {{"dst", "%di", "x64", K::device_address},
             {"src", "%si", "x64", K::device_address},
             {"ByteCount", "%dx", "u64", K::bytes},
             {"hStream", "%cx", "x64", K::handle}}},
    // cuMemcpyHtoD_v2(CUdeviceptr dstDevice, const void *srcHost, size_t ByteCount)
    CudaApi{"cuMemcpyHtoD_v2",
            CudaLayer::driver,
            {{"dstDevice", "%di", "x64", K::device_address},
             {"srcHost", "%si", "x64", K::address},
             {"ByteCount", "%dx", "u64", K::bytes}}},
    // cuMemcpyDtoH_v2(void *dstHost, CUdeviceptr srcDevice, size_t ByteCount)
    CudaApi{"cuMemcpyDtoH_v2",
            CudaLayer::driver,
            {{"dstHost", "%di", "x64", K::address},
             {"srcDevice", "%si", "x64", K::device_address},
             {"ByteCount", "%dx", "u64", K::bytes}}},
    // cuMemcpyDtoD_v2(CUdeviceptr dstDevice, CUdeviceptr srcDevice, size_t ByteCount)
    CudaApi{"cuMemcpyDtoD_v2",
            CudaLayer::driver,
            {{"dstDevice", "%di", "x64", K::device_address},
             {"srcDevice", "%si", "x64", K::device_address},
             {"ByteCount", "%dx", "u64", K::bytes}}},
    // cuMemcpyHtoDAsync_v2(CUdeviceptr dstDevice, const void *srcHost, size_t ByteCount, CUstream hStream)
    CudaApi{"cuMemcpyHtoDAsync_v2",
            CudaLayer::driver,
            {{"dstDevice", "%di", "x64", K::device_address},
             {"srcHost", "%si", "x64", K::address},
             {"ByteCount", "%dx", "u64", K::bytes},
             {"hStream", "%cx", "x64", K::handle}}},
    // cuMemcpyDtoHAsync_v2(void *dstHost, CUdeviceptr srcDevice, size_t ByteCount, CUstream hStream)
    CudaApi{"cuMemcpyDtoHAsync_v2",
            CudaLayer::driver,
            {{"dstHost", "%di", "x64", K::address},
             {"srcDevice", "%si", "x64", K::device_address},
             {"ByteCount", "%dx", "u64", K::bytes},
             {"hStream", "%cx", "x64", K::handle}}},
    // cuMemcpyDtoDAsync_v2(CUdeviceptr dstDevice, CUdeviceptr srcDevice, size_t ByteCount, CUstream hStream)
    CudaApi{"cuMemcpyDtoDAsync_v2",
            CudaLayer::driver,
            {{"dstDevice", "%di", "x64", K::device_address},
             {"srcDevice", "%si", "x64", K::device_address},
             {"ByteCount", "%dx", "u64", K::bytes},
             {"hStream", "%cx", "x64", K::handle}}},
    // cuMemsetD8_v2(CUdeviceptr dstDevice, unsigned char uc, size_t N)
    CudaApi{
        "cuMemsetD8_v2",
        CudaLayer::driver,
        {{"dstDevice", "%di", "x64", K::device_address}, {"uc", "%si", "u8", K::value}, {"N", "%dx", "u64", K::count}}},
    // cuMemsetD32_v2(CUdeviceptr dstDevice, unsigned int ui, size_t N)
    CudaApi{"cuMemsetD32_v2",
            CudaLayer::driver,
            {{"dstDevice", "%di", "x64", K::device_address},
             {"ui", "%si", "u32", K::value},
             {"N", "%dx", "u64", K::count}}},
    // cuMemsetD8Async(CUdeviceptr dstDevice, unsigned char uc, size_t N, CUstream hStream)
    CudaApi{"cuMemsetD8Async",
            CudaLayer::driver,
            {{"dstDevice", "%di", "x64", K::device_address},
             {"uc", "%si", "u8", K::value},
             {"N", "%dx", "u64", K::count},
             {"hStream", "%cx", "x64", K::handle}}},
    // cuMemsetD32Async(CUdeviceptr dstDevice, unsigned int ui, size_t N, CUstream hStream)
    CudaApi{"cuMemsetD32Async",
            CudaLayer::driver,
            {{"dstDevice", "%di", "x64", K::device_address},
             {"ui", "%si", "u32", K::value},
             {"N", "%dx", "u64", K::count},
             {"hStream", "%cx", "x64", K::handle}}},
    // cuMemAddressReserve(CUdeviceptr *ptr, size_t size, size_t alignment, CUdeviceptr addr, unsigned long long flags)
    CudaApi{"cuMemAddressReserve",
            CudaLayer::driver,
            {{"ptr", "%di", "x64", K::address},
             {"size", "%si", "u64", K::bytes},
             {"alignment", "%dx", "u64", K::count},
             {"addr", "%cx", "x64", K::device_address},
             {"flags", "%r8", "x64", K::flags}}},
    // cuMemAddressFree(CUdeviceptr ptr, size_t size)
    CudaApi{"cuMemAddressFree",
            CudaLayer::driver,
            {{"ptr", "%di", "x64", K::device_address}, {"size", "%si", "u64", K::bytes}}},
    // cuMemCreate(CUmemGenericAllocationHandle *handle, size_t size, const CUmemAllocationProp *prop, unsigned long
    // long flags)
    CudaApi{"cuMemCreate",
            CudaLayer::driver,
            {{"handle", "%di", "x64", K::address},
             {"size", "%si", "u64", K::bytes},
             {"prop", "%dx", "x64", K::address},
             {"flags", "%cx", "x64", K::flags}}},
    // cuMemRelease(CUmemGenericAllocationHandle handle)
    CudaApi{"cuMemRelease", CudaLayer::driver, {{"handle", "%di", "x64", K::handle}}},
    // cuMemMap(CUdeviceptr ptr, size_t size, size_t offset, CUmemGenericAllocationHandle handle, unsigned long long
    // flags)
    CudaApi{"cuMemMap",
            CudaLayer::driver,
            {{"ptr", "%di", "x64", K::device_address},
             {"size", "%si", "u64", K::bytes},
             {"offset", "%dx", "u64", K::count},
             {"handle", "%cx", "x64", K::handle},
             {"flags", "%r8", "x64", K::flags}}},
    // cuMemUnmap(CUdeviceptr ptr, size_t size)
    CudaApi{
        "cuMemUnmap", CudaLayer::driver, {{"ptr", "%di", "x64", K::device_address}, {"size", "%si", "u64", K::bytes}}},
    // cuMemSetAccess(CUdeviceptr ptr, size_t size, const CUmemAccessDesc *desc, size_t count)
    CudaApi{"cuMemSetAccess",
            CudaLayer::driver,
            {{"ptr", "%di", "x64", K::device_address},
             {"size", "%si", "u64", K::bytes},
             {"desc", "%dx", "x64", K::address},
             {"count", "%cx", "u64", K::count}}},
    // cuMemPrefetchAsync_v2(CUdeviceptr devPtr, size_t count, CUmemLocation location, unsigned int flags, CUstream
    // hStream)
    CudaApi{"cuMemPrefetchAsync_v2",
            CudaLayer::driver,
            {{"devPtr", "%di", "x64", K::device_address},
             {"count", "%si", "u64", K::bytes},
             {"location_type", "%dx", "u32", K::enum_value},
             {"location_id", "%dx", "b32@32/64", K::value},
             {"flags", "%cx", "x32", K::flags},
             {"hStream", "%r8", "x64", K::handle}}},
    // cuPointerGetAttribute(void *data, CUpointer_attribute attribute, CUdeviceptr ptr)
    CudaApi{"cuPointerGetAttribute",
            CudaLayer::driver,
            {{"data", "%di", "x64", K::address},
             {"attribute", "%si", "s32", K::enum_value},
             {"ptr", "%dx", "x64", K::device_address}}},
    // cuModuleLoad(CUmodule *module, const char *fname)
    CudaApi{"cuModuleLoad",
            CudaLayer::driver,
            {{"module", "%di", "x64", K::address}, {"fname", "+0(%si)", "string", K::string}}},
    // cuModuleLoadData(CUmodule *module, const void *image)
    CudaApi{"cuModuleLoadData",
            CudaLayer::driver,
            {{"module", "%di", "x64", K::address}, {"image", "%si", "x64", K::address}}},
    // cuModuleLoadDataEx(CUmodule *module, const void *image, unsigned int numOptions, CUjit_option *options, void
    // **optionValues)
    CudaApi{"cuModuleLoadDataEx",
            CudaLayer::driver,
            {{"module", "%di", "x64", K::address},
             {"image", "%si", "x64", K::address},
             {"numOptions", "%dx", "u32", K::value},
             {"options", "%cx", "x64", K::address},
             {"optionValues", "%r8", "x64", K::address}}},
    // cuModuleLoadFatBinary(CUmodule *module, const void *fatCubin)
    CudaApi{"cuModuleLoadFatBinary",
            CudaLayer::driver,
            {{"module", "%di", "x64", K::address}, {"fatCubin", "%si", "x64", K::address}}},
    // cuModuleUnload(CUmodule hmod)
    CudaApi{"cuModuleUnload", CudaLayer::driver, {{"hmod", "%di", "x64", K::handle}}},
    // cuModuleGetFunction(CUfunction *hfunc, CUmodule hmod, const char *name)
    CudaApi{"cuModuleGetFunction",
            CudaLayer::driver,
            {{"hfunc", "%di", "x64", K::address},
             {"hmod", "%si", "x64", K::handle},
             {"name", "+0(%dx)", "string", K::string}}},
    // cuLibraryLoadData(CUlibrary *library, const void *code, CUjit_option *jitOptions, void **jitOptionsValues,
    // unsigned int numJitOptions, CUlibraryOption *libraryOptions, void** libraryOptionValues, unsigned int
    // numLibraryOptions)
    CudaApi{"cuLibraryLoadData",
            CudaLayer::driver,
            {{"library", "%di", "x64", K::address},
             {"code", "%si", "x64", K::address},
             {"jitOptions", "%dx", "x64", K::address},
             {"jitOptionsValues", "%cx", "x64", K::address},
             {"numJitOptions", "%r8", "u32", K::value},
             {"libraryOptions", "%r9", "x64", K::address},
             {"libraryOptionValues", "$stack1", "x64", K::address},
             {"numLibraryOptions", "$stack2", "u32", K::value}}},
    // cuLibraryLoadFromFile(CUlibrary *library, const char *fileName, CUjit_option *jitOptions, void
    // **jitOptionsValues, unsigned int numJitOptions, CUlibraryOption *libraryOptions, void **libraryOptionValues,
    // unsigned int numLibraryOptions)
    CudaApi{"cuLibraryLoadFromFile",
            CudaLayer::driver,
            {{"library", "%di", "x64", K::address},
             {"fileName", "+0(%si)", "string", K::string},
             {"jitOptions", "%dx", "x64", K::address},
             {"jitOptionsValues", "%cx", "x64", K::address},
             {"numJitOptions", "%r8", "u32", K::value},
             {"libraryOptions", "%r9", "x64", K::address},
             {"libraryOptionValues", "$stack1", "x64", K::address},
             {"numLibraryOptions", "$stack2", "u32", K::value}}},
    // cuLibraryGetKernel(CUkernel *pKernel, CUlibrary library, const char *name)
    CudaApi{"cuLibraryGetKernel",
            CudaLayer::driver,
            {{"pKernel", "%di", "x64", K::address},
             {"library", "%si", "x64", K::handle},
             {"name", "+0(%dx)", "string", K::string}}},
    // cuLaunchKernel(CUfunction f, unsigned int gridDimX, unsigned int gridDimY, unsigned int gridDimZ, unsigned int
    // blockDimX, unsigned int blockDimY, unsigned int blockDimZ, unsigned int sharedMemBytes, CUstream hStream, void
    // **kernelParams, void **extra)
    CudaApi{"cuLaunchKernel",
            CudaLayer::driver,
            {{"f", "%di", "x64", K::handle},
             {"gridDimX", "%si", "u32", K::count},
             {"gridDimY", "%dx", "u32", K::count},
             {"gridDimZ", "%cx", "u32", K::count},
             {"blockDimX", "%r8", "u32", K::count},
             {"blockDimY", "%r9", "u32", K::count},
             {"blockDimZ", "$stack1", "u32", K::count},
             {"sharedMemBytes", "$stack2", "u32", K::bytes},
             {"hStream", "$stack3", "x64", K::handle},
             {"kernelParams", "$stack4", "x64", K::address},
             {"extra", "$stack5", "x64", K::address}}},
    // cuLaunchKernelEx(const CUlaunchConfig *config, CUfunction f, void **kernelParams, void **extra)
    CudaApi{"cuLaunchKernelEx",
            CudaLayer::driver,
            {{"config", "%di", "x64", K::address},
             {"f", "%si", "x64", K::handle},
             {"kernelParams", "%dx", "x64", K::address},
             {"extra", "%cx", "x64", K::address}}},
    // cuStreamCreate(CUstream *phStream, unsigned int Flags)
    CudaApi{"cuStreamCreate",
            CudaLayer::driver,
            {{"phStream", "%di", "x64", K::address}, {"Flags", "%si", "x32", K::flags}}},
    // cuStreamCreateWithPriority(CUstream *phStream, unsigned int flags, int priority)
    CudaApi{"cuStreamCreateWithPriority",
            CudaLayer::driver,
            {{"phStream", "%di", "x64", K::address},
             {"flags", "%si", "x32", K::flags},
             {"priority", "%dx", "s32", K::value}}},
    // cuStreamDestroy_v2(CUstream hStream)
    CudaApi{"cuStreamDestroy_v2", CudaLayer::driver, {{"hStream", "%di", "x64", K::handle}}},
    // cuStreamSynchronize(CUstream hStream)
    CudaApi{"cuStreamSynchronize", CudaLayer::driver, {{"hStream", "%di", "x64", K::handle}}},
    // cuStreamQuery(CUstream hStream)
    CudaApi{"cuStreamQuery", CudaLayer::driver, {{"hStream", "%di", "x64", K::handle}}},
    // cuEventCreate(CUevent *phEvent, unsigned int Flags)
    CudaApi{
        "cuEventCreate", CudaLayer::driver, {{"phEvent", "%di", "x64", K::address}, {"Flags", "%si", "x32", K::flags}}},
    // cuEventRecord(CUevent hEvent, CUstream hStream)
    CudaApi{"cuEventRecord",
            CudaLayer::driver,
            {{"hEvent", "%di", "x64", K::handle}, {"hStream", "%si", "x64", K::handle}}},
    // cuEventSynchronize(CUevent hEvent)
    CudaApi{"cuEventSynchronize", CudaLayer::driver, {{"hEvent", "%di", "x64", K::handle}}},
    // cuEventDestroy_v2(CUevent hEvent)
    CudaApi{"cuEventDestroy_v2", CudaLayer::driver, {{"hEvent", "%di", "x64", K::handle}}},
    // cuGetProcAddress_v2(const char *symbol, void **pfn, int cudaVersion, cuuint64_t flags,
    // CUdriverProcAddressQueryResult *symbolStatus)
    CudaApi{"cuGetProcAddress_v2",
            CudaLayer::driver,
            {{"symbol", "+0(%di)", "string", K::string},
             {"pfn", "%si", "x64", K::address},
             {"cudaVersion", "%dx", "s32", K::value},
             {"flags", "%cx", "x64", K::flags},
             {"symbolStatus", "%r8", "x64", K::address}}},
    // cuGetExportTable(const void **ppExportTable, const CUuuid *pExportTableId)
    CudaApi{"cuGetExportTable",
            CudaLayer::driver,
            {{"ppExportTable", "%di", "x64", K::address}, {"pExportTableId", "%si", "x64", K::address}}},
    // cudaDriverGetVersion(int *driverVersion)
    CudaApi{"cudaDriverGetVersion", CudaLayer::runtime, {{"driverVersion", "%di", "x64", K::address}}},
    // cudaRuntimeGetVersion(int *runtimeVersion)
    CudaApi{"cudaRuntimeGetVersion", CudaLayer::runtime, {{"runtimeVersion", "%di", "x64", K::address}}},
    // cudaGetDeviceCount(int *count)
    CudaApi{"cudaGetDeviceCount", CudaLayer::runtime, {{"count", "%di", "x64", K::address}}},
    // cudaGetDevice(int *device)
    CudaApi{"cudaGetDevice", CudaLayer::runtime, {{"device", "%di", "x64", K::address}}},
    // cudaSetDevice(int device)
    CudaApi{"cudaSetDevice", CudaLayer::runtime, {{"device", "%di", "s32", K::device}}},
    // cudaInitDevice(int device, unsigned int deviceFlags, unsigned int flags)
    CudaApi{"cudaInitDevice",
            CudaLayer::runtime,
            {{"device", "%di", "s32", K::device},
             {"deviceFlags", "%si", "x32", K::flags},
             {"flags", "%dx", "x32", K::flags}}},
    // cudaGetDeviceProperties(struct cudaDeviceProp *prop, int device)
    CudaApi{"cudaGetDeviceProperties",
            CudaLayer::runtime,
            {{"prop", "%di", "x64", K::address}, {"device", "%si", "s32", K::device}}},
    // cudaDeviceSynchronize(void)
    CudaApi{"cudaDeviceSynchronize", CudaLayer::runtime, {}},
    // cudaDeviceReset(void)
    CudaApi{"cudaDeviceReset", CudaLayer::runtime, {}},
    // cudaMalloc(void **devPtr, size_t size)
    CudaApi{"cudaMalloc", CudaLayer::runtime, {{"devPtr", "%di", "x64", K::address}, {"size", "%si", "u64", K::bytes}}},
    // cudaMallocManaged(void **devPtr, size_t size, unsigned int flags)
    CudaApi{
        "cudaMallocManaged",
        CudaLayer::runtime,
        {{"devPtr", "%di", "x64", K::address}, {"size", "%si", "u64", K::bytes}, {"flags", "%dx", "x32", K::flags}}},
    // cudaMallocHost(void **ptr, size_t size)
    CudaApi{
        "cudaMallocHost", CudaLayer::runtime, {{"ptr", "%di", "x64", K::address}, {"size", "%si", "u64", K::bytes}}},
    // cudaHostAlloc(void **pHost, size_t size, unsigned int flags)
    CudaApi{"cudaHostAlloc",
            CudaLayer::runtime,
            {{"pHost", "%di", "x64", K::address}, {"size", "%si", "u64", K::bytes}, {"flags", "%dx", "x32", K::flags}}},
    // cudaMallocAsync(void **devPtr, size_t size, cudaStream_t hStream)
    CudaApi{
        "cudaMallocAsync",
        CudaLayer::runtime,
        {{"devPtr", "%di", "x64", K::address}, {"size", "%si", "u64", K::bytes}, {"hStream", "%dx", "x64", K::handle}}},
    // cudaFree(void *devPtr)
    CudaApi{"cudaFree", CudaLayer::runtime, {{"devPtr", "%di", "x64", K::address}}},
    // cudaFreeHost(void *ptr)
    CudaApi{"cudaFreeHost", CudaLayer::runtime, {{"ptr", "%di", "x64", K::address}}},
    // cudaFreeAsync(void *devPtr, cudaStream_t hStream)
    CudaApi{"cudaFreeAsync",
            CudaLayer::runtime,
            {{"devPtr", "%di", "x64", K::address}, {"hStream", "%si", "x64", K::handle}}},
    // cudaHostRegister(void *ptr, size_t size, unsigned int flags)
    CudaApi{"cudaHostRegister",
            CudaLayer::runtime,
            {{"ptr", "%di", "x64", K::address}, {"size", "%si", "u64", K::bytes}, {"flags", "%dx", "x32", K::flags}}},
    // cudaHostUnregister(void *ptr)
    CudaApi{"cudaHostUnregister", CudaLayer::runtime, {{"ptr", "%di", "x64", K::address}}},
    // cudaMemGetInfo(size_t *free, size_t *total)
    CudaApi{"cudaMemGetInfo",
            CudaLayer::runtime,
            {{"free", "%di", "x64", K::address}, {"total", "%si", "x64", K::address}}},
    // cudaMemcpy(void *dst, const void *src, size_t count, enum cudaMemcpyKind kind)
    CudaApi{"cudaMemcpy",
            CudaLayer::runtime,
            {{"dst", "%di", "x64", K::address},
             {"src", "%si", "x64", K::address},
             {"count", "%dx", "u64", K::bytes},
             {"kind", "%cx", "s32", K::enum_value}}},
    // cudaMemcpyAsync(void *dst, const void *src, size_t count, enum cudaMemcpyKind kind, cudaStream_t stream)
    CudaApi{"cudaMemcpyAsync",
            CudaLayer::runtime,
            {{"dst", "%di", "x64", K::address},
             {"src", "%si", "x64", K::address},
             {"count", "%dx", "u64", K::bytes},
             {"kind", "%cx", "s32", K::enum_value},
             {"stream", "%r8", "x64", K::handle}}},
    // cudaMemset(void *devPtr, int value, size_t count)
    CudaApi{
        "cudaMemset",
        CudaLayer::runtime,
        {{"devPtr", "%di", "x64", K::address}, {"value", "%si", "s32", K::value}, {"count", "%dx", "u64", K::bytes}}},
    // cudaMemsetAsync(void *devPtr, int value, size_t count, cudaStream_t stream)
    CudaApi{"cudaMemsetAsync",
            CudaLayer::runtime,
            {{"devPtr", "%di", "x64", K::address},
             {"value", "%si", "s32", K::value},
             {"count", "%dx", "u64", K::bytes},
             {"stream", "%cx", "x64", K::handle}}},
    // cudaLaunchKernel(const void *func, dim3 gridDim, dim3 blockDim, void **args, size_t sharedMem, cudaStream_t
    // stream)
    CudaApi{"cudaLaunchKernel",
            CudaLayer::runtime,
            {{"func", "%di", "x64", K::address},
             {"gridDim_x", "%si", "u32", K::count},
             {"gridDim_y", "%si", "b32@32/64", K::count},
             {"gridDim_z", "%dx", "u32", K::count},
             {"blockDim_x", "%cx", "u32", K::count},
             {"blockDim_y", "%cx", "b32@32/64", K::count},
             {"blockDim_z", "%r8", "u32", K::count},
             {"args", "%r9", "x64", K::address},
             {"sharedMem", "$stack1", "u64", K::bytes},
             {"stream", "$stack2", "x64", K::handle}}},
    // cudaStreamCreate(cudaStream_t *pStream)
    CudaApi{"cudaStreamCreate", CudaLayer::runtime, {{"pStream", "%di", "x64", K::address}}},
    // cudaStreamCreateWithFlags(cudaStream_t *pStream, unsigned int flags)
    CudaApi{"cudaStreamCreateWithFlags",
            CudaLayer::runtime,
            {{"pStream", "%di", "x64", K::address}, {"flags", "%si", "x32", K::flags}}},
    // cudaStreamDestroy(cudaStream_t stream)
    CudaApi{"cudaStreamDestroy", CudaLayer::runtime, {{"stream", "%di", "x64", K::handle}}},
    // cudaStreamSynchronize(cudaStream_t stream)
    CudaApi{"cudaStreamSynchronize", CudaLayer::runtime, {{"stream", "%di", "x64", K::handle}}},
    // cudaEventCreate(cudaEvent_t *event)
    CudaApi{"cudaEventCreate", CudaLayer::runtime, {{"event", "%di", "x64", K::address}}},
    // cudaEventRecord(cudaEvent_t event, cudaStream_t stream)
    CudaApi{"cudaEventRecord",
            CudaLayer::runtime,
            {{"event", "%di", "x64", K::handle}, {"stream", "%si", "x64", K::handle}}},
    // cudaEventSynchronize(cudaEvent_t event)
    CudaApi{"cudaEventSynchronize", CudaLayer::runtime, {{"event", "%di", "x64", K::handle}}},
    // cudaEventDestroy(cudaEvent_t event)
    CudaApi{"cudaEventDestroy", CudaLayer::runtime, {{"event", "%di", "x64", K::handle}}},
};

// cuda.h (CUDA 13.0) enum cudaError_enum, in header order.
constexpr std::array kCuResults{
    CudaResult{0, "CUDA_SUCCESS"},
    CudaResult{1, "CUDA_ERROR_INVALID_VALUE"},
    CudaResult{2, "CUDA_ERROR_OUT_OF_MEMORY"},
    CudaResult{3, "CUDA_ERROR_NOT_INITIALIZED"},
    CudaResult{4, "CUDA_ERROR_DEINITIALIZED"},
    CudaResult{5, "CUDA_ERROR_PROFILER_DISABLED"},
    CudaResult{6, "CUDA_ERROR_PROFILER_NOT_INITIALIZED"},
    CudaResult{7, "CUDA_ERROR_PROFILER_ALREADY_STARTED"},
    CudaResult{8, "CUDA_ERROR_PROFILER_ALREADY_STOPPED"},
    CudaResult{34, "CUDA_ERROR_STUB_LIBRARY"},
    CudaResult{36, "CUDA_ERROR_CALL_REQUIRES_NEWER_DRIVER"},
    CudaResult{46, "CUDA_ERROR_DEVICE_UNAVAILABLE"},
    CudaResult{100, "CUDA_ERROR_NO_DEVICE"},
    CudaResult{101, "CUDA_ERROR_INVALID_DEVICE"},
    CudaResult{102, "CUDA_ERROR_DEVICE_NOT_LICENSED"},
    CudaResult{200, "CUDA_ERROR_INVALID_IMAGE"},
    CudaResult{201, "CUDA_ERROR_INVALID_CONTEXT"},
    CudaResult{202, "CUDA_ERROR_CONTEXT_ALREADY_CURRENT"},
    CudaResult{205, "CUDA_ERROR_MAP_FAILED"},
    CudaResult{206, "CUDA_ERROR_UNMAP_FAILED"},
    CudaResult{207, "CUDA_ERROR_ARRAY_IS_MAPPED"},
    CudaResult{208, "CUDA_ERROR_ALREADY_MAPPED"},
    CudaResult{209, "CUDA_ERROR_NO_BINARY_FOR_GPU"},
    CudaResult{210, "CUDA_ERROR_ALREADY_ACQUIRED"},
    CudaResult{211, "CUDA_ERROR_NOT_MAPPED"},
    CudaResult{212, "CUDA_ERROR_NOT_MAPPED_AS_ARRAY"},
    CudaResult{213, "CUDA_ERROR_NOT_MAPPED_AS_POINTER"},
    CudaResult{214, "CUDA_ERROR_ECC_UNCORRECTABLE"},
    CudaResult{215, "CUDA_ERROR_UNSUPPORTED_LIMIT"},
    CudaResult{216, "CUDA_ERROR_CONTEXT_ALREADY_IN_USE"},
    CudaResult{217, "CUDA_ERROR_PEER_ACCESS_UNSUPPORTED"},
    CudaResult{218, "CUDA_ERROR_INVALID_PTX"},
    CudaResult{219, "CUDA_ERROR_INVALID_GRAPHICS_CONTEXT"},
    CudaResult{220, "CUDA_ERROR_NVLINK_UNCORRECTABLE"},
    CudaResult{221, "CUDA_ERROR_JIT_COMPILER_NOT_FOUND"},
    CudaResult{222, "CUDA_ERROR_UNSUPPORTED_PTX_VERSION"},
    CudaResult{223, "CUDA_ERROR_JIT_COMPILATION_DISABLED"},
    CudaResult{224, "CUDA_ERROR_UNSUPPORTED_EXEC_AFFINITY"},
    CudaResult{225, "CUDA_ERROR_UNSUPPORTED_DEVSIDE_SYNC"},
    CudaResult{226, "CUDA_ERROR_CONTAINED"},
    CudaResult{300, "CUDA_ERROR_INVALID_SOURCE"},
    CudaResult{301, "CUDA_ERROR_FILE_NOT_FOUND"},
    CudaResult{302, "CUDA_ERROR_SHARED_OBJECT_SYMBOL_NOT_FOUND"},
    CudaResult{303, "CUDA_ERROR_SHARED_OBJECT_INIT_FAILED"},
    CudaResult{304, "CUDA_ERROR_OPERATING_SYSTEM"},
    CudaResult{400, "CUDA_ERROR_INVALID_HANDLE"},
    CudaResult{401, "CUDA_ERROR_ILLEGAL_STATE"},
    CudaResult{402, "CUDA_ERROR_LOSSY_QUERY"},
    CudaResult{500, "CUDA_ERROR_NOT_FOUND"},
    CudaResult{600, "CUDA_ERROR_NOT_READY"},
    CudaResult{700, "CUDA_ERROR_ILLEGAL_ADDRESS"},
    CudaResult{701, "CUDA_ERROR_LAUNCH_OUT_OF_RESOURCES"},
    CudaResult{702, "CUDA_ERROR_LAUNCH_TIMEOUT"},
    CudaResult{703, "CUDA_ERROR_LAUNCH_INCOMPATIBLE_TEXTURING"},
    CudaResult{704, "CUDA_ERROR_PEER_ACCESS_ALREADY_ENABLED"},
    CudaResult{705, "CUDA_ERROR_PEER_ACCESS_NOT_ENABLED"},
    CudaResult{708, "CUDA_ERROR_PRIMARY_CONTEXT_ACTIVE"},
    CudaResult{709, "CUDA_ERROR_CONTEXT_IS_DESTROYED"},
    CudaResult{710, "CUDA_ERROR_ASSERT"},
    CudaResult{711, "CUDA_ERROR_TOO_MANY_PEERS"},
    CudaResult{712, "CUDA_ERROR_HOST_MEMORY_ALREADY_REGISTERED"},
    CudaResult{713, "CUDA_ERROR_HOST_MEMORY_NOT_REGISTERED"},
    CudaResult{714, "CUDA_ERROR_HARDWARE_STACK_ERROR"},
    CudaResult{715, "CUDA_ERROR_ILLEGAL_INSTRUCTION"},
    CudaResult{716, "CUDA_ERROR_MISALIGNED_ADDRESS"},
    CudaResult{717, "CUDA_ERROR_INVALID_ADDRESS_SPACE"},
    CudaResult{718, "CUDA_ERROR_INVALID_PC"},
    CudaResult{719, "CUDA_ERROR_LAUNCH_FAILED"},
    CudaResult{720, "CUDA_ERROR_COOPERATIVE_LAUNCH_TOO_LARGE"},
    CudaResult{721, "CUDA_ERROR_TENSOR_MEMORY_LEAK"},
    CudaResult{800, "CUDA_ERROR_NOT_PERMITTED"},
    CudaResult{801, "CUDA_ERROR_NOT_SUPPORTED"},
    CudaResult{802, "CUDA_ERROR_SYSTEM_NOT_READY"},
    CudaResult{803, "CUDA_ERROR_SYSTEM_DRIVER_MISMATCH"},
    CudaResult{804, "CUDA_ERROR_COMPAT_NOT_SUPPORTED_ON_DEVICE"},
    CudaResult{805, "CUDA_ERROR_MPS_CONNECTION_FAILED"},
    CudaResult{806, "CUDA_ERROR_MPS_RPC_FAILURE"},
    CudaResult{807, "CUDA_ERROR_MPS_SERVER_NOT_READY"},
    CudaResult{808, "CUDA_ERROR_MPS_MAX_CLIENTS_REACHED"},
    CudaResult{809, "CUDA_ERROR_MPS_MAX_CONNECTIONS_REACHED"},
    CudaResult{810, "CUDA_ERROR_MPS_CLIENT_TERMINATED"},
    CudaResult{811, "CUDA_ERROR_CDP_NOT_SUPPORTED"},
    CudaResult{812, "CUDA_ERROR_CDP_VERSION_MISMATCH"},
    CudaResult{900, "CUDA_ERROR_STREAM_CAPTURE_UNSUPPORTED"},
    CudaResult{901, "CUDA_ERROR_STREAM_CAPTURE_INVALIDATED"},
    CudaResult{902, "CUDA_ERROR_STREAM_CAPTURE_MERGE"},
    CudaResult{903, "CUDA_ERROR_STREAM_CAPTURE_UNMATCHED"},
    CudaResult{904, "CUDA_ERROR_STREAM_CAPTURE_UNJOINED"},
    CudaResult{905, "CUDA_ERROR_STREAM_CAPTURE_ISOLATION"},
    CudaResult{906, "CUDA_ERROR_STREAM_CAPTURE_IMPLICIT"},
    CudaResult{907, "CUDA_ERROR_CAPTURED_EVENT"},
    CudaResult{908, "CUDA_ERROR_STREAM_CAPTURE_WRONG_THREAD"},
    CudaResult{909, "CUDA_ERROR_TIMEOUT"},
    CudaResult{910, "CUDA_ERROR_GRAPH_EXEC_UPDATE_FAILURE"},
    CudaResult{911, "CUDA_ERROR_EXTERNAL_DEVICE"},
    CudaResult{912, "CUDA_ERROR_INVALID_CLUSTER_SIZE"},
    CudaResult{913, "CUDA_ERROR_FUNCTION_NOT_LOADED"},
    CudaResult{914, "CUDA_ERROR_INVALID_RESOURCE_TYPE"},
    CudaResult{915, "CUDA_ERROR_INVALID_RESOURCE_CONFIGURATION"},
    CudaResult{916, "CUDA_ERROR_KEY_ROTATION"},
    CudaResult{999, "CUDA_ERROR_UNKNOWN"},
};

// driver_types.h (CUDA 13.0) enum cudaError, in header order. cudaErrorApiFailureBase is deprecated but still
// declared.
constexpr std::array kCudaErrors{
    CudaResult{0, "cudaSuccess"},
    CudaResult{1, "cudaErrorInvalidValue"},
    CudaResult{2, "cudaErrorMemoryAllocation"},
    CudaResult{3, "cudaErrorInitializationError"},
    CudaResult{4, "cudaErrorCudartUnloading"},
    CudaResult{5, "cudaErrorProfilerDisabled"},
    CudaResult{6, "cudaErrorProfilerNotInitialized"},
    CudaResult{7, "cudaErrorProfilerAlreadyStarted"},
    CudaResult{8, "cudaErrorProfilerAlreadyStopped"},
    CudaResult{9, "cudaErrorInvalidConfiguration"},
    CudaResult{12, "cudaErrorInvalidPitchValue"},
    CudaResult{13, "cudaErrorInvalidSymbol"},
    CudaResult{16, "cudaErrorInvalidHostPointer"},
    CudaResult{17, "cudaErrorInvalidDevicePointer"},
    CudaResult{18, "cudaErrorInvalidTexture"},
    CudaResult{19, "cudaErrorInvalidTextureBinding"},
    CudaResult{20, "cudaErrorInvalidChannelDescriptor"},
    CudaResult{21, "cudaErrorInvalidMemcpyDirection"},
    CudaResult{22, "cudaErrorAddressOfConstant"},
    CudaResult{23, "cudaErrorTextureFetchFailed"},
    CudaResult{24, "cudaErrorTextureNotBound"},
    CudaResult{25, "cudaErrorSynchronizationError"},
    CudaResult{26, "cudaErrorInvalidFilterSetting"},
    CudaResult{27, "cudaErrorInvalidNormSetting"},
    CudaResult{28, "cudaErrorMixedDeviceExecution"},
    CudaResult{31, "cudaErrorNotYetImplemented"},
    CudaResult{32, "cudaErrorMemoryValueTooLarge"},
    CudaResult{34, "cudaErrorStubLibrary"},
    CudaResult{35, "cudaErrorInsufficientDriver"},
    CudaResult{36, "cudaErrorCallRequiresNewerDriver"},
    CudaResult{37, "cudaErrorInvalidSurface"},
    CudaResult{43, "cudaErrorDuplicateVariableName"},
    CudaResult{44, "cudaErrorDuplicateTextureName"},
    CudaResult{45, "cudaErrorDuplicateSurfaceName"},
    CudaResult{46, "cudaErrorDevicesUnavailable"},
    CudaResult{49, "cudaErrorIncompatibleDriverContext"},
    CudaResult{52, "cudaErrorMissingConfiguration"},
    CudaResult{53, "cudaErrorPriorLaunchFailure"},
    CudaResult{65, "cudaErrorLaunchMaxDepthExceeded"},
    CudaResult{66, "cudaErrorLaunchFileScopedTex"},
    CudaResult{67, "cudaErrorLaunchFileScopedSurf"},
    CudaResult{68, "cudaErrorSyncDepthExceeded"},
    CudaResult{69, "cudaErrorLaunchPendingCountExceeded"},
    CudaResult{98, "cudaErrorInvalidDeviceFunction"},
    CudaResult{100, "cudaErrorNoDevice"},
    CudaResult{101, "cudaErrorInvalidDevice"},
    CudaResult{102, "cudaErrorDeviceNotLicensed"},
    CudaResult{103, "cudaErrorSoftwareValidityNotEstablished"},
    CudaResult{127, "cudaErrorStartupFailure"},
    CudaResult{200, "cudaErrorInvalidKernelImage"},
    CudaResult{201, "cudaErrorDeviceUninitialized"},
    CudaResult{205, "cudaErrorMapBufferObjectFailed"},
    CudaResult{206, "cudaErrorUnmapBufferObjectFailed"},
    CudaResult{207, "cudaErrorArrayIsMapped"},
    CudaResult{208, "cudaErrorAlreadyMapped"},
    CudaResult{209, "cudaErrorNoKernelImageForDevice"},
    CudaResult{210, "cudaErrorAlreadyAcquired"},
    CudaResult{211, "cudaErrorNotMapped"},
    CudaResult{212, "cudaErrorNotMappedAsArray"},
    CudaResult{213, "cudaErrorNotMappedAsPointer"},
    CudaResult{214, "cudaErrorECCUncorrectable"},
    CudaResult{215, "cudaErrorUnsupportedLimit"},
    CudaResult{216, "cudaErrorDeviceAlreadyInUse"},
    CudaResult{217, "cudaErrorPeerAccessUnsupported"},
    CudaResult{218, "cudaErrorInvalidPtx"},
    CudaResult{219, "cudaErrorInvalidGraphicsContext"},
    CudaResult{220, "cudaErrorNvlinkUncorrectable"},
    CudaResult{221, "cudaErrorJitCompilerNotFound"},
    CudaResult{222, "cudaErrorUnsupportedPtxVersion"},
    CudaResult{223, "cudaErrorJitCompilationDisabled"},
    CudaResult{224, "cudaErrorUnsupportedExecAffinity"},
    CudaResult{225, "cudaErrorUnsupportedDevSideSync"},
    CudaResult{226, "cudaErrorContained"},
    CudaResult{300, "cudaErrorInvalidSource"},
    CudaResult{301, "cudaErrorFileNotFound"},
    CudaResult{302, "cudaErrorSharedObjectSymbolNotFound"},
    CudaResult{303, "cudaErrorSharedObjectInitFailed"},
    CudaResult{304, "cudaErrorOperatingSystem"},
    CudaResult{400, "cudaErrorInvalidResourceHandle"},
    CudaResult{401, "cudaErrorIllegalState"},
    CudaResult{402, "cudaErrorLossyQuery"},
    CudaResult{500, "cudaErrorSymbolNotFound"},
    CudaResult{600, "cudaErrorNotReady"},
    CudaResult{700, "cudaErrorIllegalAddress"},
    CudaResult{701, "cudaErrorLaunchOutOfResources"},
    CudaResult{702, "cudaErrorLaunchTimeout"},
    CudaResult{703, "cudaErrorLaunchIncompatibleTexturing"},
    CudaResult{704, "cudaErrorPeerAccessAlreadyEnabled"},
    CudaResult{705, "cudaErrorPeerAccessNotEnabled"},
    CudaResult{708, "cudaErrorSetOnActiveProcess"},
    CudaResult{709, "cudaErrorContextIsDestroyed"},
    CudaResult{710, "cudaErrorAssert"},
    CudaResult{711, "cudaErrorTooManyPeers"},
    CudaResult{712, "cudaErrorHostMemoryAlreadyRegistered"},
    CudaResult{713, "cudaErrorHostMemoryNotRegistered"},
    CudaResult{714, "cudaErrorHardwareStackError"},
    CudaResult{715, "cudaErrorIllegalInstruction"},
    CudaResult{716, "cudaErrorMisalignedAddress"},
    CudaResult{717, "cudaErrorInvalidAddressSpace"},
    CudaResult{718, "cudaErrorInvalidPc"},
    CudaResult{719, "cudaErrorLaunchFailure"},
    CudaResult{720, "cudaErrorCooperativeLaunchTooLarge"},
    CudaResult{721, "cudaErrorTensorMemoryLeak"},
    CudaResult{800, "cudaErrorNotPermitted"},
    CudaResult{801, "cudaErrorNotSupported"},
    CudaResult{802, "cudaErrorSystemNotReady"},
    CudaResult{803, "cudaErrorSystemDriverMismatch"},
    CudaResult{804, "cudaErrorCompatNotSupportedOnDevice"},
    CudaResult{805, "cudaErrorMpsConnectionFailed"},
    CudaResult{806, "cudaErrorMpsRpcFailure"},
    CudaResult{807, "cudaErrorMpsServerNotReady"},
    CudaResult{808, "cudaErrorMpsMaxClientsReached"},
    CudaResult{809, "cudaErrorMpsMaxConnectionsReached"},
    CudaResult{810, "cudaErrorMpsClientTerminated"},
    CudaResult{811, "cudaErrorCdpNotSupported"},
    CudaResult{812, "cudaErrorCdpVersionMismatch"},
    CudaResult{900, "cudaErrorStreamCaptureUnsupported"},
    CudaResult{901, "cudaErrorStreamCaptureInvalidated"},
    CudaResult{902, "cudaErrorStreamCaptureMerge"},
    CudaResult{903, "cudaErrorStreamCaptureUnmatched"},
    CudaResult{904, "cudaErrorStreamCaptureUnjoined"},
    CudaResult{905, "cudaErrorStreamCaptureIsolation"},
    CudaResult{906, "cudaErrorStreamCaptureImplicit"},
    CudaResult{907, "cudaErrorCapturedEvent"},
    CudaResult{908, "cudaErrorStreamCaptureWrongThread"},
    CudaResult{909, "cudaErrorTimeout"},
    CudaResult{910, "cudaErrorGraphExecUpdateFailure"},
    CudaResult{911, "cudaErrorExternalDevice"},
    CudaResult{912, "cudaErrorInvalidClusterSize"},
    CudaResult{913, "cudaErrorFunctionNotLoaded"},
    CudaResult{914, "cudaErrorInvalidResourceType"},
    CudaResult{915, "cudaErrorInvalidResourceConfiguration"},
    CudaResult{999, "cudaErrorUnknown"},
    CudaResult{10000, "cudaErrorApiFailureBase"},
};

std::optional<std::string_view> find_result(std::span<const CudaResult> table, std::int64_t value) {
    for (const auto& r : table)
        if (r.value == value) return std::string_view(r.name);
    return std::nullopt;
}

}  // namespace

std::span<const CudaApiArg> CudaApi::arguments() const {
    std::size_t n = 0;
    while (n < kCudaApiMaxArgs && args[n].name)
        ++n;
    return {args, n};
}

std::span<const CudaApi> cuda_apis() {
    return kCudaApis;
}

const CudaApi* cuda_api(std::string_view symbol) {
    for (std::string_view suffix : {"_ptds", "_ptsz"})
        if (symbol.size() > suffix.size() && symbol.substr(symbol.size() - suffix.size()) == suffix) {
            symbol.remove_suffix(suffix.size());
            break;
        }
    auto it = std::find_if(kCudaApis.begin(), kCudaApis.end(), [&](const CudaApi& a) { return symbol == a.symbol; });
    return it == kCudaApis.end() ? nullptr : &*it;
}

std::string cuda_fetchargs(const CudaApi& api) {
    std::string out;
    for (const auto& a : api.arguments()) {
        if (!out.empty()) out += ' ';
        out += fmt::format("{}={}:{}", a.name, a.location, a.type);
    }
    return out;
}

std::span<const CudaResult> cu_results() {
    return kCuResults;
}

std::span<const CudaResult> cuda_errors() {
    return kCudaErrors;
}

std::optional<std::string_view> cu_result_name(std::int64_t value) {
    return find_result(kCuResults, value);
}

std::optional<std::string_view> cuda_error_name(std::int64_t value) {
    return find_result(kCudaErrors, value);
}

}  // namespace nvtrace
