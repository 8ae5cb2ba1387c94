//! TCP segments as bytes: the probes we send, the replies we read, and the
//! kernel filter that keeps other traffic off the raw socket. Pure code.

use std::net::{Ipv4Addr, SocketAddrV4};

pub const FIN: u8 = 0x01;
pub const SYN: u8 = 0x02;
pub const RST: u8 = 0x04;
pub const ACK: u8 = 0x10;

/// Length of a TCP header without options: probes carry none, so in
/// particular no timestamps that would let a TIME-WAIT accept them early.
pub const TCP_HEADER_LEN: usize = 20;

/// The internet checksum (RFC 1071) of `parts` taken as one byte string.
pub fn checksum(parts: &[&[u8]]) -> u16 {
    let mut sum: u32 = 0;
    let mut odd: Option<u8> = None;
    for &b in parts.iter().flat_map(|p| p.iter()) {
        match odd.take() {
            Some(hi) => sum += u32::from(u16::from_be_bytes([hi, b])),
            None => odd = Some(b),
        }
    }
    if let Some(hi) = odd {
        sum += u32::from(u16::from_be_bytes([hi, 0]));
    }
    while sum >> 16 != 0 {
        sum = (sum & 0xffff) + (sum >> 16);
    }
    !(sum as u16)
}

/// The IPv4 pseudo-header the TCP checksum covers.
fn pseudo_header(src: Ipv4Addr, dst: Ipv4Addr, tcp_len: u16) -> [u8; 12] {
    let mut p = [0u8; 12];
    p[..4].copy_from_slice(&src.octets());
    p[4..8].copy_from_slice(&dst.octets());
    p[9] = libc::IPPROTO_TCP as u8;
    p[10..].copy_from_slice(&tcp_len.to_be_bytes());
    p
}

/// One option-less TCP header from `src` to `dst`, checksum filled in.
/// The kernel adds the IP header when it is sent on a raw socket.
pub fn segment(
    src: SocketAddrV4,
    dst: SocketAddrV4,
    seq: u32,
    ack: u32,
    flags: u8,
) -> [u8; TCP_HEADER_LEN] {
    let mut h = [0u8; TCP_HEADER_LEN];
    h[0..2].copy_from_slice(&src.port().to_be_bytes());
    h[2..4].copy_from_slice(&dst.port().to_be_bytes());
    h[4..8].copy_from_slice(&seq.to_be_bytes());
    h[8..12].copy_from_slice(&ack.to_be_bytes());
    h[12] = ((TCP_HEADER_LEN / 4) as u8) << 4;
    h[13] = flags;
    h[14..16].copy_from_slice(&u16::MAX.to_be_bytes()); // window
    let sum = checksum(&[
        &pseudo_header(*src.ip(), *dst.ip(), TCP_HEADER_LEN as u16),
        &h,
    ]);
    h[16..18].copy_from_slice(&sum.to_be_bytes());
    h
}

/// The fields of a received TCP segment that the test looks at.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Segment {
    pub src: SocketAddrV4,
    pub dst: SocketAddrV4,
    pub seq: u32,
    pub ack: u32,
    pub flags: u8,
}

/// Parses an IPv4 packet as a raw socket delivers it (IP header first);
/// None for anything that is not a whole enough TCP segment.
pub fn parse(packet: &[u8]) -> Option<Segment> {
    let (&first, _) = packet.split_first()?;
    let ihl = usize::from(first & 0x0f) * 4;
    if first >> 4 != 4 || ihl < 20 || packet.len() < ihl + TCP_HEADER_LEN {
        return None;
    }
    if packet[9] != libc::IPPROTO_TCP as u8 {
        return None;
    }
    // Only a first fragment carries the TCP header.
    if u16::from_be_bytes([packet[6], packet[7]]) & 0x1fff != 0 {
        return None;
    }
    let ip = |at: usize| Ipv4Addr::new(packet[at], packet[at + 1], packet[at + 2], packet[at + 3]);
    let t = &packet[ihl..];
    let u16_at = |at: usize| u16::from_be_bytes([t[at], t[at + 1]]);
    let u32_at = |at: usize| u32::from_be_bytes([t[at], t[at + 1], t[at + 2], t[at + 3]]);
    Some(Segment {
        src: SocketAddrV4::new(ip(12), u16_at(0)),
        dst: SocketAddrV4::new(ip(16), u16_at(2)),
        seq: u32_at(4),
        ack: u32_at(8),
        flags: t[13],
    })
}

/// What the product's answer to a probe SYN (sequence number `isn`) says.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Answer {
    /// SYN-ACK: a new connection is accepted, TIME-WAIT is over.
    Accept,
    /// A bare ACK: the old connection is still in TIME-WAIT.
    TimeWait,
    /// RST: no connection and nobody listening on the port.
    Refuse,
}

/// Classifies `s` as an answer to our probe, None if it is none (another
/// connection, a stray retransmission, our own packets on loopback).
pub fn answer(s: &Segment, ours: SocketAddrV4, product: SocketAddrV4, isn: u32) -> Option<Answer> {
    if s.src != product || s.dst != ours {
        return None;
    }
    let f = s.flags & (SYN | ACK | RST | FIN);
    if f == SYN | ACK && s.ack == isn.wrapping_add(1) {
        Some(Answer::Accept)
    } else if f & RST != 0 && (f & ACK == 0 || s.ack == isn.wrapping_add(1)) {
        Some(Answer::Refuse)
    } else if f == ACK {
        Some(Answer::TimeWait)
    } else {
        None
    }
}

/// A classic BPF program for a raw IPv4 socket that passes only TCP
/// segments from port `src` to port `dst`, so that a busy loopback does
/// not fill the socket's buffer. Userspace still checks the addresses.
pub fn port_filter(src: u16, dst: u16) -> [libc::sock_filter; 7] {
    let op = |code: u32, jt: u8, jf: u8, k: u32| libc::sock_filter {
        code: code as u16,
        jt,
        jf,
        k,
    };
    use libc::{BPF_B, BPF_H, BPF_IND, BPF_JEQ, BPF_JMP, BPF_K, BPF_LD, BPF_LDX, BPF_MSH, BPF_RET};
    [
        // X = IP header length.
        op(BPF_LDX | BPF_B | BPF_MSH, 0, 0, 0),
        op(BPF_LD | BPF_H | BPF_IND, 0, 0, 0),
        op(BPF_JMP | BPF_JEQ | BPF_K, 0, 3, u32::from(src)),
        op(BPF_LD | BPF_H | BPF_IND, 0, 0, 2),
        op(BPF_JMP | BPF_JEQ | BPF_K, 0, 1, u32::from(dst)),
        op(BPF_RET | BPF_K, 0, 0, u32::MAX),
        op(BPF_RET | BPF_K, 0, 0, 0),
    ]
}

#[cfg(test)]
mod tests {
    use super::*;

    fn addr(s: &str) -> SocketAddrV4 {
        s.parse().unwrap()
    }

    /// An IPv4 packet around `tcp`, as a raw socket hands it over, with
    /// `options` words of IP options.
    fn ip_packet(src: Ipv4Addr, dst: Ipv4Addr, tcp: &[u8], options: usize) -> Vec<u8> {
        let ihl = 5 + options;
        let mut p = vec![0u8; ihl * 4];
        p[0] = 0x40 | ihl as u8;
        p[2..4].copy_from_slice(&((ihl * 4 + tcp.len()) as u16).to_be_bytes());
        p[6] = 0x40; // don't fragment
        p[8] = 64;
        p[9] = 6;
        p[12..16].copy_from_slice(&src.octets());
        p[16..20].copy_from_slice(&dst.octets());
        p.extend_from_slice(tcp);
        p
    }

    #[test]
    fn the_checksum_is_rfc_1071_s() {
        // RFC 1071's worked example: the sum is 0xddf2, so 0x220d.
        let bytes = [0x00, 0x01, 0xf2, 0x03, 0xf4, 0xf5, 0xf6, 0xf7];
        assert_eq!(checksum(&[&bytes]), 0x220d);
        // Split anywhere, even mid-word, it is the same byte string.
        assert_eq!(checksum(&[&bytes[..3], &bytes[3..]]), 0x220d);
        // An odd length is padded with a zero byte.
        assert_eq!(checksum(&[&[0x01]]), !0x0100);
        assert_eq!(checksum(&[]), 0xffff);
    }

    #[test]
    fn a_probe_is_an_option_less_syn_with_a_valid_checksum() {
        let (src, dst) = (addr("127.0.0.1:40000"), addr("10.1.2.3:3128"));
        let s = segment(src, dst, 0xdead_beef, 0, SYN);
        assert_eq!(&s[0..2], &40000u16.to_be_bytes());
        assert_eq!(&s[2..4], &3128u16.to_be_bytes());
        assert_eq!(&s[4..8], &0xdead_beefu32.to_be_bytes());
        assert_eq!(&s[8..12], &[0; 4]);
        assert_eq!(s[12], 5 << 4, "a 20-byte header: no options, no timestamps");
        assert_eq!(s[13], SYN);
        assert_eq!(&s[18..20], &[0, 0], "no urgent pointer");
        // Summed over the pseudo-header and the segment with its checksum,
        // a valid segment gives zero.
        let pseudo = pseudo_header(*src.ip(), *dst.ip(), 20);
        assert_eq!(checksum(&[&pseudo, &s]), 0);
        // And the checksum covers the addresses.
        let moved = pseudo_header(Ipv4Addr::new(127, 0, 0, 2), *dst.ip(), 20);
        assert_ne!(checksum(&[&moved, &s]), 0);
    }

    #[test]
    fn replies_are_parsed_past_ip_options() {
        let (product, ours) = (addr("127.0.0.1:3128"), addr("127.0.0.1:40000"));
        let tcp = segment(product, ours, 7, 0x1234_5679, SYN | ACK);
        for options in [0, 1, 10] {
            let p = ip_packet(*product.ip(), *ours.ip(), &tcp, options);
            let s = parse(&p).unwrap();
            assert_eq!(
                s,
                Segment {
                    src: product,
                    dst: ours,
                    seq: 7,
                    ack: 0x1234_5679,
                    flags: SYN | ACK
                }
            );
        }
    }

    #[test]
    fn what_is_not_a_whole_tcp_segment_is_not_parsed() {
        let tcp = segment(addr("1.2.3.4:1"), addr("5.6.7.8:2"), 1, 2, ACK);
        let good = ip_packet(
            Ipv4Addr::new(1, 2, 3, 4),
            Ipv4Addr::new(5, 6, 7, 8),
            &tcp,
            0,
        );
        assert!(parse(&good).is_some());
        assert!(parse(&good[..39]).is_none(), "short");
        assert!(parse(&[]).is_none());
        let mut udp = good.clone();
        udp[9] = 17;
        assert!(parse(&udp).is_none(), "not TCP");
        let mut v6 = good.clone();
        v6[0] = 0x65;
        assert!(parse(&v6).is_none(), "not IPv4");
        let mut ihl = good.clone();
        ihl[0] = 0x44;
        assert!(parse(&ihl).is_none(), "header length below 20");
        let mut frag = good.clone();
        frag[7] = 3;
        assert!(parse(&frag).is_none(), "a later fragment");
    }

    #[test]
    fn answers_are_told_apart_and_strangers_ignored() {
        let (product, ours) = (addr("127.0.0.1:3128"), addr("127.0.0.1:40000"));
        let isn = u32::MAX; // the ACK of a SYN wraps around to 0
        let seg = |src, dst, ack, flags| Segment {
            src,
            dst,
            seq: 99,
            ack,
            flags,
        };
        let a = |s: Segment| answer(&s, ours, product, isn);
        assert_eq!(a(seg(product, ours, 0, SYN | ACK)), Some(Answer::Accept));
        assert_eq!(
            a(seg(product, ours, 5, SYN | ACK)),
            None,
            "a SYN-ACK to another SYN"
        );
        assert_eq!(a(seg(product, ours, 1234, ACK)), Some(Answer::TimeWait));
        assert_eq!(a(seg(product, ours, 0, RST | ACK)), Some(Answer::Refuse));
        assert_eq!(a(seg(product, ours, 0, RST)), Some(Answer::Refuse));
        assert_eq!(
            a(seg(product, ours, 1234, RST | ACK)),
            None,
            "the reset of the closed connection, not of a probe"
        );
        assert_eq!(a(seg(product, ours, 0, FIN | ACK)), None);
        assert_eq!(a(seg(ours, product, 0, SYN)), None, "our own probe");
        let other = addr("127.0.0.1:40001");
        assert_eq!(a(seg(product, other, 0, SYN | ACK)), None);
        assert_eq!(a(seg(addr("127.0.0.2:3128"), ours, 0, SYN | ACK)), None);
    }

    /// Runs the few classic BPF instructions [`port_filter`] uses.
    fn run_bpf(prog: &[libc::sock_filter], p: &[u8]) -> u32 {
        use libc::{
            BPF_B, BPF_H, BPF_IND, BPF_JEQ, BPF_JMP, BPF_K, BPF_LD, BPF_LDX, BPF_MSH, BPF_RET,
        };
        let (mut a, mut x, mut pc) = (0u32, 0u32, 0usize);
        loop {
            let i = prog[pc];
            let k = i.k as usize;
            match u32::from(i.code) {
                c if c == BPF_LDX | BPF_B | BPF_MSH => x = 4 * u32::from(p[k] & 0x0f),
                c if c == BPF_LD | BPF_H | BPF_IND => {
                    let at = x as usize + k;
                    match p.get(at..at + 2) {
                        Some(b) => a = u32::from(u16::from_be_bytes([b[0], b[1]])),
                        None => return 0, // out of the packet: dropped
                    }
                }
                c if c == BPF_JMP | BPF_JEQ | BPF_K => {
                    pc += usize::from(if a == i.k { i.jt } else { i.jf });
                }
                c if c == BPF_RET | BPF_K => return i.k,
                c => panic!("unexpected instruction {c:#x}"),
            }
            pc += 1;
        }
    }

    #[test]
    fn the_kernel_filter_passes_only_the_probed_port_pair() {
        let prog = port_filter(3128, 40000);
        let pkt = |sp, dp, options| {
            let tcp = segment(
                SocketAddrV4::new(Ipv4Addr::LOCALHOST, sp),
                SocketAddrV4::new(Ipv4Addr::LOCALHOST, dp),
                1,
                2,
                ACK,
            );
            ip_packet(Ipv4Addr::LOCALHOST, Ipv4Addr::LOCALHOST, &tcp, options)
        };
        assert_ne!(run_bpf(&prog, &pkt(3128, 40000, 0)), 0);
        assert_ne!(run_bpf(&prog, &pkt(3128, 40000, 3)), 0, "past IP options");
        assert_eq!(run_bpf(&prog, &pkt(40000, 3128, 0)), 0, "our own probe");
        assert_eq!(run_bpf(&prog, &pkt(3128, 40001, 0)), 0);
        assert_eq!(run_bpf(&prog, &pkt(3129, 40000, 0)), 0);
        assert_eq!(run_bpf(&prog, &pkt(3128, 40000, 0)[..22]), 0, "cut short");
    }
}
