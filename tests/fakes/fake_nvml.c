/*
 * A fake libnvidia-ml.so.1 for tests on machines without an NVIDIA GPU.
 *
 * pynvml loads the library with ctypes and calls one C symbol per query, so this file
 * implements exactly those symbols, filling the same C structs the real driver fills.
 * Values come from a scenario file named by $FAKE_NVML_SCENARIO, re-read whenever it
 * changes (inode, size or mtime), so a test can change the picture while a process runs.
 *
 * Scenario format: one record per line, fields separated by TABs ('#' starts a comment):
 *   init_error  <code>                      nvmlInit* returns this code (9 = driver not loaded)
 *   driver      <version string>
 *   missing     <symbol>                    the symbol returns NVML_ERROR_FUNCTION_NOT_FOUND
 *   call_log    <path>                      append every called symbol name to this file
 *   gpu         <index> <key> <value>       keys: name uuid util_gpu util_mem mem_total
 *                                           mem_base_used mem_reserved temp power_mw
 *                                           power_limit_mw sm_clock mem_clock
 *   error       <index> <symbol> <code>     that symbol fails with <code> on that GPU
 *   proc        <index> <pid> <bytes> [persist]
 *   putil       <index> <pid> <sm%> <mem%>  that process's utilisation sample on that GPU
 *                                           (nvmlDeviceGetProcessUtilization; a listed process
 *                                           without one has no sample, as on a real driver
 *                                           for a process that did not run a kernel lately)
 *
 * A process is listed (and its bytes counted in "used") only while /proc/<pid> exists and
 * is not a zombie: a real driver frees a process's memory when it exits, not when it is
 * reaped. "persist" lists it regardless (a PID from another PID namespace).
 *
 * A symbol can also be really absent: the test builder links with a version script that
 * leaves it out of the dynamic symbol table, as on an old driver.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/time.h>

typedef int nvmlReturn_t;
enum {
    NVML_SUCCESS = 0,
    NVML_ERROR_UNINITIALIZED = 1,
    NVML_ERROR_INVALID_ARGUMENT = 2,
    NVML_ERROR_NOT_SUPPORTED = 3,
    NVML_ERROR_NOT_FOUND = 6,
    NVML_ERROR_INSUFFICIENT_SIZE = 7,
    NVML_ERROR_DRIVER_NOT_LOADED = 9,
    NVML_ERROR_FUNCTION_NOT_FOUND = 13,
    NVML_ERROR_ARGUMENT_VERSION_MISMATCH = 25,
    NVML_ERROR_UNKNOWN = 999,
};

#define MAX_GPUS 64
#define MAX_PROCS 1024
#define MAX_MISSING 64
#define MAX_ERRORS 256
#define NAME_LEN 96

#define NVML_MEMORY_V2 0x02000028u
#define NVML_TEMPERATURE_V1 0x0100000Cu

typedef struct { unsigned int gpu, memory; } nvmlUtilization_t;
typedef struct { unsigned long long total, free, used; } nvmlMemory_t;
typedef struct {
    unsigned int version;
    unsigned long long total, reserved, free, used;
} nvmlMemory_v2_t;
typedef struct {
    unsigned int version;
    unsigned int sensorType;
    int temperature;
} nvmlTemperature_v1_t;
typedef struct {
    unsigned int pid;
    unsigned long long usedGpuMemory;
    unsigned int gpuInstanceId;
    unsigned int computeInstanceId;
} nvmlProcessInfo_t;
/* nvml.h: nvmlProcessUtilizationSample_t (pynvml's c_nvmlProcessUtilizationSample_t) */
typedef struct {
    unsigned int pid;
    unsigned long long timeStamp;
    unsigned int smUtil, memUtil, encUtil, decUtil;
} nvmlProcessUtilizationSample_t;

struct fake_gpu {
    char name[NAME_LEN];
    char uuid[NAME_LEN];
    unsigned int util_gpu, util_mem;
    unsigned long long mem_total, mem_base_used, mem_reserved;
    unsigned int temp, power_mw, power_limit_mw, sm_clock, mem_clock;
};
struct fake_proc { unsigned int gpu, pid, persist; unsigned long long bytes; };
struct fake_putil { unsigned int gpu, pid, sm, mem; };
struct fake_error { unsigned int gpu; char symbol[NAME_LEN]; int code; };

/* The handle pynvml keeps is a pointer into this array. */
struct fake_device { int index; };
static struct fake_device devices[MAX_GPUS];

static struct {
    int init_error;
    char driver[NAME_LEN];
    unsigned int gpu_count;
    struct fake_gpu gpus[MAX_GPUS];
    unsigned int proc_count;
    struct fake_proc procs[MAX_PROCS];
    unsigned int putil_count;
    struct fake_putil putils[MAX_PROCS];
    unsigned int missing_count;
    char missing[MAX_MISSING][NAME_LEN];
    unsigned int error_count;
    struct fake_error errors[MAX_ERRORS];
    char call_log[4096];
} sc;

static int initialized;
static struct stat loaded_stat;
static int loaded_once;

static void reset_scenario(void) {
    memset(&sc, 0, sizeof sc);
    strcpy(sc.driver, "550.54.15");
}

static void set_gpu_field(struct fake_gpu *g, const char *key, const char *val) {
    unsigned long long n = strtoull(val, NULL, 10);
    if (!strcmp(key, "name")) snprintf(g->name, NAME_LEN, "%s", val);
    else if (!strcmp(key, "uuid")) snprintf(g->uuid, NAME_LEN, "%s", val);
    else if (!strcmp(key, "util_gpu")) g->util_gpu = (unsigned int)n;
    else if (!strcmp(key, "util_mem")) g->util_mem = (unsigned int)n;
    else if (!strcmp(key, "mem_total")) g->mem_total = n;
    else if (!strcmp(key, "mem_base_used")) g->mem_base_used = n;
    else if (!strcmp(key, "mem_reserved")) g->mem_reserved = n;
    else if (!strcmp(key, "temp")) g->temp = (unsigned int)n;
    else if (!strcmp(key, "power_mw")) g->power_mw = (unsigned int)n;
    else if (!strcmp(key, "power_limit_mw")) g->power_limit_mw = (unsigned int)n;
    else if (!strcmp(key, "sm_clock")) g->sm_clock = (unsigned int)n;
    else if (!strcmp(key, "mem_clock")) g->mem_clock = (unsigned int)n;
}

/* Split a line on TABs in place; returns the number of fields. */
static int split_tabs(char *line, char **fields, int max) {
    int n = 0;
    char *p = line;
    while (n < max) {
        fields[n++] = p;
        char *tab = strchr(p, '\t');
        if (!tab) break;
        *tab = '\0';
        p = tab + 1;
    }
    return n;
}

static void parse_line(char *line) {
    char *f[6];
    line[strcspn(line, "\r\n")] = '\0';
    if (line[0] == '#' || line[0] == '\0') return;
    int n = split_tabs(line, f, 6);
    if (!strcmp(f[0], "init_error") && n >= 2) {
        sc.init_error = atoi(f[1]);
    } else if (!strcmp(f[0], "driver") && n >= 2) {
        snprintf(sc.driver, NAME_LEN, "%s", f[1]);
    } else if (!strcmp(f[0], "call_log") && n >= 2) {
        snprintf(sc.call_log, sizeof sc.call_log, "%s", f[1]);
    } else if (!strcmp(f[0], "missing") && n >= 2 && sc.missing_count < MAX_MISSING) {
        snprintf(sc.missing[sc.missing_count++], NAME_LEN, "%s", f[1]);
    } else if (!strcmp(f[0], "gpu") && n >= 4) {
        unsigned int i = (unsigned int)atoi(f[1]);
        if (i >= MAX_GPUS) return;
        if (i + 1 > sc.gpu_count) sc.gpu_count = i + 1;
        set_gpu_field(&sc.gpus[i], f[2], f[3]);
    } else if (!strcmp(f[0], "error") && n >= 4 && sc.error_count < MAX_ERRORS) {
        struct fake_error *e = &sc.errors[sc.error_count++];
        e->gpu = (unsigned int)atoi(f[1]);
        snprintf(e->symbol, NAME_LEN, "%s", f[2]);
        e->code = atoi(f[3]);
    } else if (!strcmp(f[0], "proc") && n >= 4 && sc.proc_count < MAX_PROCS) {
        struct fake_proc *p = &sc.procs[sc.proc_count++];
        p->gpu = (unsigned int)atoi(f[1]);
        p->pid = (unsigned int)strtoul(f[2], NULL, 10);
        p->bytes = strtoull(f[3], NULL, 10);
        p->persist = n >= 5 && !strcmp(f[4], "persist");
    } else if (!strcmp(f[0], "putil") && n >= 5 && sc.putil_count < MAX_PROCS) {
        struct fake_putil *u = &sc.putils[sc.putil_count++];
        u->gpu = (unsigned int)atoi(f[1]);
        u->pid = (unsigned int)strtoul(f[2], NULL, 10);
        u->sm = (unsigned int)atoi(f[3]);
        u->mem = (unsigned int)atoi(f[4]);
    }
}

/* Re-read the scenario when the file changed; keep the last good one otherwise. */
static void load_scenario(void) {
    const char *path = getenv("FAKE_NVML_SCENARIO");
    struct stat st;
    if (!path || stat(path, &st) != 0) {
        if (!loaded_once) reset_scenario();
        return;
    }
    if (loaded_once && st.st_ino == loaded_stat.st_ino && st.st_size == loaded_stat.st_size &&
        st.st_mtim.tv_sec == loaded_stat.st_mtim.tv_sec &&
        st.st_mtim.tv_nsec == loaded_stat.st_mtim.tv_nsec)
        return;
    FILE *fp = fopen(path, "r");
    if (!fp) return;
    reset_scenario();
    char line[1024];
    while (fgets(line, sizeof line, fp)) parse_line(line);
    fclose(fp);
    loaded_stat = st;
    loaded_once = 1;
}

static void log_call(const char *symbol) {
    if (!sc.call_log[0]) return;
    FILE *fp = fopen(sc.call_log, "a");
    if (!fp) return;
    fprintf(fp, "%s\n", symbol);
    fclose(fp);
}

static int is_missing(const char *symbol) {
    for (unsigned int i = 0; i < sc.missing_count; i++)
        if (!strcmp(sc.missing[i], symbol)) return 1;
    return 0;
}

/* Common entry of every query: reload, log, then "missing" and "not initialised". */
static nvmlReturn_t enter(const char *symbol) {
    load_scenario();
    log_call(symbol);
    if (is_missing(symbol)) return NVML_ERROR_FUNCTION_NOT_FOUND;
    if (!initialized) return NVML_ERROR_UNINITIALIZED;
    return NVML_SUCCESS;
}

/* Resolve a handle to a GPU index and apply a per-GPU injected error. */
static nvmlReturn_t device_enter(const char *symbol, void *handle, struct fake_gpu **out) {
    nvmlReturn_t r = enter(symbol);
    if (r != NVML_SUCCESS) return r;
    struct fake_device *d = (struct fake_device *)handle;
    if (d < devices || d >= devices + MAX_GPUS) return NVML_ERROR_INVALID_ARGUMENT;
    unsigned int i = (unsigned int)(d - devices);
    if (i >= sc.gpu_count) return NVML_ERROR_INVALID_ARGUMENT;
    for (unsigned int k = 0; k < sc.error_count; k++)
        if (sc.errors[k].gpu == i && !strcmp(sc.errors[k].symbol, symbol)) return sc.errors[k].code;
    *out = &sc.gpus[i];
    return NVML_SUCCESS;
}

static unsigned int gpu_index(struct fake_gpu *g) { return (unsigned int)(g - sc.gpus); }

/* Alive means /proc/<pid>/stat exists and the state is not Z (exited, unreaped). */
static int pid_alive(unsigned int pid) {
    char path[64], buf[512];
    snprintf(path, sizeof path, "/proc/%u/stat", pid);
    FILE *fp = fopen(path, "r");
    if (!fp) return 0;
    size_t n = fread(buf, 1, sizeof buf - 1, fp);
    fclose(fp);
    buf[n] = '\0';
    char *rparen = strrchr(buf, ')');
    if (!rparen || rparen[1] == '\0' || rparen[2] == '\0') return 0;
    char state = rparen[2];
    return state != 'Z' && state != 'X';
}

static int proc_listed(const struct fake_proc *p) { return p->persist || pid_alive(p->pid); }

static unsigned long long used_bytes(struct fake_gpu *g) {
    unsigned int i = gpu_index(g);
    unsigned long long used = g->mem_base_used;
    for (unsigned int k = 0; k < sc.proc_count; k++)
        if (sc.procs[k].gpu == i && proc_listed(&sc.procs[k])) used += sc.procs[k].bytes;
    if (used > g->mem_total) used = g->mem_total;
    return used;
}

static nvmlReturn_t copy_string(char *dst, unsigned int length, const char *src) {
    if (!dst) return NVML_ERROR_INVALID_ARGUMENT;
    if (strlen(src) + 1 > length) return NVML_ERROR_INSUFFICIENT_SIZE;
    strcpy(dst, src);
    return NVML_SUCCESS;
}

/* ---- exported symbols ---------------------------------------------------------------- */

nvmlReturn_t nvmlInitWithFlags(unsigned int flags) {
    (void)flags;
    load_scenario();
    log_call("nvmlInitWithFlags");
    if (is_missing("nvmlInitWithFlags")) return NVML_ERROR_FUNCTION_NOT_FOUND;
    if (!getenv("FAKE_NVML_SCENARIO")) return NVML_ERROR_DRIVER_NOT_LOADED;
    if (sc.init_error) return sc.init_error;
    for (int i = 0; i < MAX_GPUS; i++) devices[i].index = i;
    initialized++;
    return NVML_SUCCESS;
}

nvmlReturn_t nvmlInit_v2(void) { return nvmlInitWithFlags(0); }

nvmlReturn_t nvmlShutdown(void) {
    nvmlReturn_t r = enter("nvmlShutdown");
    if (r != NVML_SUCCESS) return r;
    initialized--;
    return NVML_SUCCESS;
}

const char *nvmlErrorString(nvmlReturn_t result) {
    switch (result) {
    case NVML_SUCCESS: return "Success";
    case NVML_ERROR_UNINITIALIZED: return "Uninitialized";
    case NVML_ERROR_INVALID_ARGUMENT: return "Invalid Argument";
    case NVML_ERROR_NOT_SUPPORTED: return "Not Supported";
    case NVML_ERROR_INSUFFICIENT_SIZE: return "Insufficient Size";
    case NVML_ERROR_DRIVER_NOT_LOADED: return "Driver Not Loaded";
    case NVML_ERROR_FUNCTION_NOT_FOUND: return "Function Not Found";
    case NVML_ERROR_ARGUMENT_VERSION_MISMATCH: return "Argument Version Mismatch";
    default: return "Unknown Error";
    }
}

nvmlReturn_t nvmlSystemGetDriverVersion(char *version, unsigned int length) {
    nvmlReturn_t r = enter("nvmlSystemGetDriverVersion");
    return r != NVML_SUCCESS ? r : copy_string(version, length, sc.driver);
}

nvmlReturn_t nvmlDeviceGetCount_v2(unsigned int *count) {
    nvmlReturn_t r = enter("nvmlDeviceGetCount_v2");
    if (r != NVML_SUCCESS) return r;
    if (!count) return NVML_ERROR_INVALID_ARGUMENT;
    *count = sc.gpu_count;
    return NVML_SUCCESS;
}

nvmlReturn_t nvmlDeviceGetHandleByIndex_v2(unsigned int index, void **device) {
    nvmlReturn_t r = enter("nvmlDeviceGetHandleByIndex_v2");
    if (r != NVML_SUCCESS) return r;
    if (!device || index >= sc.gpu_count) return NVML_ERROR_INVALID_ARGUMENT;
    *device = &devices[index];
    return NVML_SUCCESS;
}

nvmlReturn_t nvmlDeviceGetName(void *dev, char *name, unsigned int length) {
    struct fake_gpu *g;
    nvmlReturn_t r = device_enter("nvmlDeviceGetName", dev, &g);
    return r != NVML_SUCCESS ? r : copy_string(name, length, g->name);
}

nvmlReturn_t nvmlDeviceGetUUID(void *dev, char *uuid, unsigned int length) {
    struct fake_gpu *g;
    nvmlReturn_t r = device_enter("nvmlDeviceGetUUID", dev, &g);
    return r != NVML_SUCCESS ? r : copy_string(uuid, length, g->uuid);
}

nvmlReturn_t nvmlDeviceGetUtilizationRates(void *dev, nvmlUtilization_t *util) {
    struct fake_gpu *g;
    nvmlReturn_t r = device_enter("nvmlDeviceGetUtilizationRates", dev, &g);
    if (r != NVML_SUCCESS) return r;
    if (!util) return NVML_ERROR_INVALID_ARGUMENT;
    util->gpu = g->util_gpu;
    util->memory = g->util_mem;
    return NVML_SUCCESS;
}

nvmlReturn_t nvmlDeviceGetMemoryInfo(void *dev, nvmlMemory_t *mem) {
    struct fake_gpu *g;
    nvmlReturn_t r = device_enter("nvmlDeviceGetMemoryInfo", dev, &g);
    if (r != NVML_SUCCESS) return r;
    if (!mem) return NVML_ERROR_INVALID_ARGUMENT;
    /* v1 counts reserved memory as used, as the real driver does. */
    unsigned long long used = used_bytes(g) + g->mem_reserved;
    if (used > g->mem_total) used = g->mem_total;
    mem->total = g->mem_total;
    mem->used = used;
    mem->free = g->mem_total - used;
    return NVML_SUCCESS;
}

nvmlReturn_t nvmlDeviceGetMemoryInfo_v2(void *dev, nvmlMemory_v2_t *mem) {
    struct fake_gpu *g;
    nvmlReturn_t r = device_enter("nvmlDeviceGetMemoryInfo_v2", dev, &g);
    if (r != NVML_SUCCESS) return r;
    if (!mem) return NVML_ERROR_INVALID_ARGUMENT;
    if (mem->version != NVML_MEMORY_V2) return NVML_ERROR_ARGUMENT_VERSION_MISMATCH;
    unsigned long long used = used_bytes(g);
    unsigned long long taken = used + g->mem_reserved;
    if (taken > g->mem_total) taken = g->mem_total;
    mem->total = g->mem_total;
    mem->reserved = g->mem_reserved;
    mem->used = used;
    mem->free = g->mem_total - taken;
    return NVML_SUCCESS;
}

nvmlReturn_t nvmlDeviceGetTemperature(void *dev, unsigned int sensor, unsigned int *temp) {
    struct fake_gpu *g;
    nvmlReturn_t r = device_enter("nvmlDeviceGetTemperature", dev, &g);
    if (r != NVML_SUCCESS) return r;
    if (!temp || sensor != 0) return NVML_ERROR_INVALID_ARGUMENT;
    *temp = g->temp;
    return NVML_SUCCESS;
}

nvmlReturn_t nvmlDeviceGetTemperatureV(void *dev, nvmlTemperature_v1_t *temp) {
    struct fake_gpu *g;
    nvmlReturn_t r = device_enter("nvmlDeviceGetTemperatureV", dev, &g);
    if (r != NVML_SUCCESS) return r;
    if (!temp || temp->sensorType != 0) return NVML_ERROR_INVALID_ARGUMENT;
    if (temp->version != NVML_TEMPERATURE_V1) return NVML_ERROR_ARGUMENT_VERSION_MISMATCH;
    temp->temperature = (int)g->temp;
    return NVML_SUCCESS;
}

nvmlReturn_t nvmlDeviceGetPowerUsage(void *dev, unsigned int *mw) {
    struct fake_gpu *g;
    nvmlReturn_t r = device_enter("nvmlDeviceGetPowerUsage", dev, &g);
    if (r != NVML_SUCCESS) return r;
    if (!mw) return NVML_ERROR_INVALID_ARGUMENT;
    *mw = g->power_mw;
    return NVML_SUCCESS;
}

nvmlReturn_t nvmlDeviceGetEnforcedPowerLimit(void *dev, unsigned int *mw) {
    struct fake_gpu *g;
    nvmlReturn_t r = device_enter("nvmlDeviceGetEnforcedPowerLimit", dev, &g);
    if (r != NVML_SUCCESS) return r;
    if (!mw) return NVML_ERROR_INVALID_ARGUMENT;
    *mw = g->power_limit_mw;
    return NVML_SUCCESS;
}

nvmlReturn_t nvmlDeviceGetPowerManagementLimit(void *dev, unsigned int *mw) {
    struct fake_gpu *g;
    nvmlReturn_t r = device_enter("nvmlDeviceGetPowerManagementLimit", dev, &g);
    if (r != NVML_SUCCESS) return r;
    if (!mw) return NVML_ERROR_INVALID_ARGUMENT;
    *mw = g->power_limit_mw;
    return NVML_SUCCESS;
}

nvmlReturn_t nvmlDeviceGetClockInfo(void *dev, unsigned int type, unsigned int *mhz) {
    struct fake_gpu *g;
    nvmlReturn_t r = device_enter("nvmlDeviceGetClockInfo", dev, &g);
    if (r != NVML_SUCCESS) return r;
    if (!mhz) return NVML_ERROR_INVALID_ARGUMENT;
    switch (type) {
    case 0: /* graphics */
    case 1: *mhz = g->sm_clock; return NVML_SUCCESS; /* SM */
    case 2: *mhz = g->mem_clock; return NVML_SUCCESS; /* memory */
    default: return NVML_ERROR_NOT_SUPPORTED;
    }
}

/* Same contract as the driver: too small a buffer -> INSUFFICIENT_SIZE and the needed count. */
static nvmlReturn_t running_processes(const char *symbol, void *dev, unsigned int *count,
                                      nvmlProcessInfo_t *infos) {
    struct fake_gpu *g;
    nvmlReturn_t r = device_enter(symbol, dev, &g);
    if (r != NVML_SUCCESS) return r;
    if (!count) return NVML_ERROR_INVALID_ARGUMENT;
    unsigned int i = gpu_index(g), n = 0;
    for (unsigned int k = 0; k < sc.proc_count; k++)
        if (sc.procs[k].gpu == i && proc_listed(&sc.procs[k])) n++;
    if (n == 0) {
        *count = 0;
        return NVML_SUCCESS;
    }
    if (!infos || *count < n) {
        *count = n;
        return NVML_ERROR_INSUFFICIENT_SIZE;
    }
    unsigned int out = 0;
    for (unsigned int k = 0; k < sc.proc_count && out < n; k++) {
        if (sc.procs[k].gpu != i || !proc_listed(&sc.procs[k])) continue;
        infos[out].pid = sc.procs[k].pid;
        infos[out].usedGpuMemory = sc.procs[k].bytes;
        infos[out].gpuInstanceId = 0xFFFFFFFFu;
        infos[out].computeInstanceId = 0xFFFFFFFFu;
        out++;
    }
    *count = out;
    return NVML_SUCCESS;
}

nvmlReturn_t nvmlDeviceGetComputeRunningProcesses_v3(void *dev, unsigned int *count,
                                                     nvmlProcessInfo_t *infos) {
    return running_processes("nvmlDeviceGetComputeRunningProcesses_v3", dev, count, infos);
}

nvmlReturn_t nvmlDeviceGetComputeRunningProcesses_v2(void *dev, unsigned int *count,
                                                     nvmlProcessInfo_t *infos) {
    return running_processes("nvmlDeviceGetComputeRunningProcesses_v2", dev, count, infos);
}

/* The listed process of GPU i with this pid, or NULL (a sample is only given for a process the
 * driver lists on that GPU). */
static const struct fake_proc *listed_proc(unsigned int i, unsigned int pid) {
    for (unsigned int k = 0; k < sc.proc_count; k++)
        if (sc.procs[k].gpu == i && sc.procs[k].pid == pid && proc_listed(&sc.procs[k])) return &sc.procs[k];
    return NULL;
}

/* nvml.h, nvmlDeviceGetProcessUtilization(device, utilization, processSamplesCount,
 * lastSeenTimeStamp): samples newer than lastSeenTimeStamp (CPU time, microseconds since the
 * epoch). Called first with utilization NULL, it answers NVML_ERROR_INSUFFICIENT_SIZE and the
 * count (pynvml's nvmlDeviceGetProcessUtilization relies on exactly that, then calls again with
 * a buffer); with no sample newer than lastSeenTimeStamp it answers NVML_ERROR_NOT_FOUND, which
 * is what a real driver says for an idle GPU (nvitop treats it as "no samples"). A sample's
 * timestamp here is the time of the call. */
nvmlReturn_t nvmlDeviceGetProcessUtilization(void *dev, nvmlProcessUtilizationSample_t *utilization,
                                             unsigned int *count, unsigned long long lastSeen) {
    struct fake_gpu *g;
    nvmlReturn_t r = device_enter("nvmlDeviceGetProcessUtilization", dev, &g);
    if (r != NVML_SUCCESS) return r;
    if (!count) return NVML_ERROR_INVALID_ARGUMENT;
    struct timeval tv;
    gettimeofday(&tv, NULL);
    unsigned long long now = (unsigned long long)tv.tv_sec * 1000000ULL + (unsigned long long)tv.tv_usec;
    unsigned int i = gpu_index(g), n = 0;
    if (now > lastSeen)
        for (unsigned int k = 0; k < sc.putil_count; k++)
            if (sc.putils[k].gpu == i && listed_proc(i, sc.putils[k].pid)) n++;
    if (n == 0) {
        *count = 0;
        return NVML_ERROR_NOT_FOUND;
    }
    if (!utilization || *count < n) {
        *count = n;
        return NVML_ERROR_INSUFFICIENT_SIZE;
    }
    unsigned int out = 0;
    for (unsigned int k = 0; k < sc.putil_count && out < n; k++) {
        if (sc.putils[k].gpu != i || !listed_proc(i, sc.putils[k].pid)) continue;
        utilization[out].pid = sc.putils[k].pid;
        utilization[out].timeStamp = now;
        utilization[out].smUtil = sc.putils[k].sm;
        utilization[out].memUtil = sc.putils[k].mem;
        utilization[out].encUtil = 0;
        utilization[out].decUtil = 0;
        out++;
    }
    *count = out;
    return NVML_SUCCESS;
}
