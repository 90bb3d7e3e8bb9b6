// The release build's entry point (Makefile: -e locket_entry): madvise the
// executable's own code and data into large folios, then glibc's _start.
//
// Why: after a reboot the kernel reads the executable back in as its pages
// fault, 4 KiB folios at a time, and every later run maps and unmaps those
// small folios one by one. A range read in through a MADV_HUGEPAGE mapping
// stays in the page cache as 2 MiB folios, and a later fault maps a whole
// one at once: a lookup then starts 15-20 % faster (bench/README.md, "Large
// folios"). MADV_RANDOM keeps the read to the folio that faulted: without
// it the kernel reads the next 2 MiB too, and a stray fault there would map
// all of it. Pages already cached stay as they are until evicted, so this
// must come before the first fault in what it covers: it is the process's
// first code, before glibc's start-up has set up TLS or resolved ifuncs,
// hence no libc call, no stack protector and no compiler-made memcpy here.
//
// What it covers: the code from locket_hot_text (the first symbol of .text,
// 2 MiB aligned; link/startup.order puts the code the common commands run
// after it) to the 2 MiB boundary past locket_hot_text_end (the order's last
// symbol), and the file-backed part of each writable segment. Not the cold
// rest of the code: a stray fault there would map a whole folio and count
// megabytes of code never run against `find`'s peak RSS (SPEC §11: 8 MiB).
// Nor the first segment, which the kernel has already read to load us.
// The zero-filled tail of the data is populated at once (below): Linux 5.14
// and later; older kernels refuse the advice and the pages fault as before. The
// stub itself sits in an orphan section after .text, so the read-around of
// its own first fault lands in the file's cold tail. Results are ignored:
// with THP off, or another kernel, nothing changes but the speed.
#if defined(__x86_64__) && defined(__linux__)
#include <elf.h>
#include <stdint.h>

extern const Elf64_Ehdr __ehdr_start;
extern const char locket_hot_text[], locket_hot_text_end[];

#define LARGE_FOLIO ((uintptr_t)2 << 20)
#define PAGE ((uintptr_t)4096)

__attribute__((always_inline)) static inline void advise(uintptr_t start, uintptr_t end) {
    if (end <= start) return;
    for (long advice = 1 /* MADV_RANDOM */; advice; advice = advice == 1 ? 14 /* MADV_HUGEPAGE */ : 0) {
        long result;
        __asm__ volatile("syscall"
                         : "=a"(result)
                         : "0"(28L /* SYS_madvise */), "D"(start), "S"(end - start), "d"(advice)
                         : "rcx", "r11", "memory");
        (void)result;
    }
}

__attribute__((always_inline)) static inline void populate_write(uintptr_t start, uintptr_t end) {
    if (end <= start) return;
    long result;
    __asm__ volatile("syscall"
                     : "=a"(result)
                     : "0"(28L /* SYS_madvise */), "D"(start), "S"(end - start), "d"(23L /* MADV_POPULATE_WRITE */)
                     : "rcx", "r11", "memory");
    (void)result;
}

__attribute__((used, no_stack_protector, visibility("hidden"), section("locket_entry_code")))
void locket_entry_advise(void) {
    uintptr_t hot = (uintptr_t)locket_hot_text;
    advise(hot, ((uintptr_t)locket_hot_text_end + LARGE_FOLIO - 1) & ~(LARGE_FOLIO - 1));
    const Elf64_Phdr *headers = (const Elf64_Phdr *)((const char *)&__ehdr_start + __ehdr_start.e_phoff);
    for (unsigned i = 0; i < __ehdr_start.e_phnum; i++) {
        const Elf64_Phdr *segment = &headers[i];
        if (segment->p_type == PT_LOAD && (segment->p_flags & PF_W) && segment->p_filesz > 0)
            advise(segment->p_vaddr & ~(PAGE - 1), (segment->p_vaddr + segment->p_filesz + PAGE - 1) & ~(PAGE - 1));
        // The zero-filled tail (.bss, 61 pages): a `find -w` touches 22 of
        // them, spread over all of it (the Swift runtime's once-tokens and
        // caches, glibc's and SQLite's state), and a page first read and
        // then written faults twice (the zero page, then its copy): 37
        // faults of ~2 us on this VM. Populated here in one call (~0.9 us a
        // page): faults 151 -> 117, the lookup 1-1.4 % faster, peak RSS +68
        // KiB (bench/README.md "Page faults of a lookup").
        if (segment->p_type == PT_LOAD && (segment->p_flags & PF_W) && segment->p_memsz > segment->p_filesz)
            populate_write((segment->p_vaddr + segment->p_filesz + PAGE - 1) & ~(PAGE - 1),
                           (segment->p_vaddr + segment->p_memsz + PAGE - 1) & ~(PAGE - 1));
    }
}

__asm__(
    "    .section .text.locket_hot_text,\"ax\",@progbits\n"
    "    .p2align 21\n"
    "    .globl locket_hot_text\n"
    "    .type locket_hot_text,@function\n"
    "locket_hot_text:\n"
    "    ret\n"
    "    .size locket_hot_text, .-locket_hot_text\n"
    "    .section .text.locket_hot_text_end,\"ax\",@progbits\n"
    "    .globl locket_hot_text_end\n"
    "    .type locket_hot_text_end,@function\n"
    "locket_hot_text_end:\n"
    "    ret\n"
    "    .size locket_hot_text_end, .-locket_hot_text_end\n"
    // The kernel leaves rsp at argc (16-byte aligned, as a call site needs)
    // and rdx holding the exit hook _start passes on: both reach _start as
    // they were.
    "    .section locket_entry_code,\"ax\",@progbits\n"
    "    .globl locket_entry\n"
    "    .type locket_entry,@function\n"
    "locket_entry:\n"
    "    mov %rdx, %r12\n"
    "    call locket_entry_advise\n"
    "    mov %r12, %rdx\n"
    "    jmp _start\n"
    "    .size locket_entry, .-locket_entry\n"
    "    .text\n");
#endif
