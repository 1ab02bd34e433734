/* Excerpt of kernel-open/nvidia/nv.c, NVIDIA/open-gpu-kernel-modules 01db2841 (MIT); bodies cut. */
static int           nvidia_ctl_open        (struct inode *, struct file *);
static long          nvidia_unlocked_ioctl (struct file *, unsigned int, unsigned long);

static struct file_operations nvidia_fops = {
    .unlocked_ioctl = nvidia_unlocked_ioctl,
};

static
NvBool nv_detect_sme_enabled(
    void
)
{
    return NV_FALSE;
}

static int
nvidia_ctl_open(
    struct inode *inode,
    struct file *file
)
{
    return 0;
}

NV_STATUS NV_API_CALL nv_register_peer_io_mem(
    nv_state_t *nv,
    NvU64      *phys_addr,
    NvU64       page_count,
    void      **priv_data
)
{
    return NV_OK;
}
