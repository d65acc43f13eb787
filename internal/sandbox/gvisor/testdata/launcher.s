# The warm sandbox's launcher (launcher.go): `as` assembles this into
# launcherCode, and TestLauncherCodeMatchesSource checks that they agree.
#
# It runs as the sandbox's init. fd 3 is the command pipe (read end), fd 4
# the status pipe (write end); the driver holds the other ends from boot.
# It says it is ready with one byte "R" on fd 4, reads the launch message
# from fd 3 until EOF into BUF (the driver lays it out for that address:
# four pointers path, argv, envp, cwd, then what they point to), closes
# fd 3, marks fd 4 close-on-exec, changes to cwd and execs the runner in
# its own place. If chdir or execve fails it writes {errno, stage} (two
# 32-bit words, stage 1 chdir, 2 execve) to fd 4 and exits with 127.
	.intel_syntax noprefix
	.set BUF, 0x10000000
	.set CAP, 0x100000
	.set CMD, 3
	.set STATUS, 4
	.globl _start
_start:
	mov byte ptr [BUF], 'R'      # write(STATUS, "R", 1)
	mov eax, 1
	mov edi, STATUS
	mov esi, BUF
	mov edx, 1
	syscall
	mov r13d, BUF                # r13: where the next read goes
read:
	xor eax, eax                 # read(CMD, r13, BUF+CAP-r13)
	mov edi, CMD
	mov rsi, r13
	mov edx, BUF+CAP
	sub edx, r13d
	syscall
	test rax, rax
	jle got                      # EOF (or an error: the message is then incomplete and chdir fails)
	add r13, rax
	jmp read
got:
	mov eax, 72                  # fcntl(STATUS, F_SETFD, FD_CLOEXEC)
	mov edi, STATUS
	mov esi, 2
	mov edx, 1
	syscall
	mov eax, 3                   # close(CMD)
	mov edi, CMD
	syscall
	mov r12d, 1                  # stage 1
	mov eax, 80                  # chdir(cwd)
	mov rdi, [BUF+24]
	syscall
	test rax, rax
	jl fail
	mov r12d, 2                  # stage 2
	mov eax, 59                  # execve(path, argv, envp): returns only on failure
	mov rdi, [BUF]
	mov rsi, [BUF+8]
	mov rdx, [BUF+16]
	syscall
fail:
	neg eax                      # write(STATUS, {errno, stage}, 8)
	mov dword ptr [BUF], eax
	mov dword ptr [BUF+4], r12d
	mov eax, 1
	mov edi, STATUS
	mov esi, BUF
	mov edx, 8
	syscall
	mov eax, 231                 # exit_group(127)
	mov edi, 127
	syscall
