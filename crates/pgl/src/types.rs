//! PGL's record types and their fields (from the language's reference):
//! what a file may set, and of what type. Setting an unknown field is an
//! error; which fields cacheoff models is `lower`'s business.

/// A record type: its name and its fields with their types. A field's
/// type is a scalar type (`float`, `size_distr`, `addr[]`, …) or another
/// record type, created empty when first reached.
pub struct RecordType {
    pub name: &'static str,
    pub fields: &'static [(&'static str, &'static str)],
}

/// The fields every agent (Robot, Server, Proxy) has.
const AGENT: &[(&str, &str)] = &[
    ("addresses", "addr[]"),
    ("ssl_wraps", "SslWrap[]"),
    ("kind", "string"),
    ("world", "string"),
    ("http_versions", "string[]"),
    ("xact_lifetime", "time_distr"),
    ("xact_think", "time_distr"),
    ("pconn_use_lmt", "int_distr"),
    ("idle_pconn_tout", "time"),
    ("pop_model", "PopModel"),
    ("abort_prob", "float"),
    ("cookie_sender", "float"),
    ("custom_stats_scope", "string[]"),
    ("http_headers", "MimeHeader[]"),
    ("socket", "Socket"),
];

const ROBOT: &[(&str, &str)] = &[
    ("origins", "addr[]"),
    ("req_rate", "rate"),
    ("req_inter_arrival", "time_distr"),
    ("recurrence", "float"),
    ("embed_recur", "float"),
    ("interests", "string[]"),
    ("req_types", "string[]"),
    ("req_methods", "string[]"),
    ("open_conn_lmt", "int"),
    ("wait_xact_lmt", "int"),
    ("minimize_new_conn", "float"),
    ("private_cache_cap", "int"),
    ("unique_urls", "bool"),
    ("proxies", "addr[]"),
    ("http_proxies", "addr[]"),
    ("ftp_proxies", "addr[]"),
    ("socks_proxies", "addr[]"),
    ("dns_resolver", "DnsResolver"),
    ("session", "Session"),
    ("credentials", "string[]"),
    ("auth_error", "float"),
    ("spnego_auth_ratio", "float"),
    ("passive_ftp", "float"),
    ("socks_prob", "float"),
    ("socks_chaining_prob", "float"),
    ("icp_port", "int"),
    ("peer_http", "addr"),
    ("peer_icp", "addr"),
    ("foreign_trace", "string"),
    ("raw_uri_thrower", "string"),
    ("pipeline_depth", "float_distr"),
    ("cookies_keep_lmt", "float_distr"),
    ("container_tags", "string[]"),
    ("accept_content_encodings", "string[]"),
    ("ranges", "Range[]"),
    ("req_body_pause_prob", "float"),
    ("req_body_recurrence", "float"),
    ("req_body_pause_start", "size"),
    ("post_contents", "Content[]"),
    ("put_contents", "Content[]"),
    ("upload_contents", "Content[]"),
    ("acl", "Acl"),
    ("kerberos_wrap", "KerberosWrap"),
];

const SERVER: &[(&str, &str)] = &[
    ("contents", "Content[]"),
    ("direct_access", "Content[]"),
    ("accept_lmt", "int"),
    ("rep_types", "string[]"),
    ("cookie_set_count", "float_distr"),
    ("cookie_set_prob", "float"),
    ("cookie_value_size", "size_distr"),
    ("req_body_allowed", "float"),
    ("protocol", "string[]"),
];

const CONTENT: &[(&str, &str)] = &[
    ("kind", "string"),
    ("mime", "Mime"),
    ("size", "size_distr"),
    ("obj_life_cycle", "ObjLifeCycle"),
    ("cachable", "float"),
    ("checksum", "float"),
    ("unique", "float"),
    ("may_contain", "Content[]"),
    ("embedded_obj_cnt", "int_distr"),
    ("choice_space", "int"),
    ("client_behavior", "ClientBehavior"),
    ("generator", "string"),
    ("content_db", "string"),
    ("inject_object", "string"),
    ("inject_db", "string"),
    ("infect_prob", "float"),
    ("inject_gap", "size_distr"),
    ("encodings", "string[]"),
    ("mime_headers", "MimeHeader[]"),
    ("document_root", "string"),
];

const BENCH_SIDE: &[(&str, &str)] = &[
    ("hosts", "addr[]"),
    ("max_host_load", "rate"),
    ("max_agent_load", "rate"),
    ("addr_space", "addr[]"),
    ("addr_mask", "addr"),
    ("addresses", "addr[]"),
    ("cpu_cores", "int[]"),
];

const SCHEME: &[(&str, &str)] = &[("agents_per_addr", "int"), ("kind", "string")];

/// Every record type a file may declare.
pub const TYPES: &[RecordType] = &[
    RecordType {
        name: "Robot",
        fields: &[],
    },
    RecordType {
        name: "Server",
        fields: &[],
    },
    RecordType {
        name: "Proxy",
        fields: &[],
    },
    RecordType {
        name: "Content",
        fields: CONTENT,
    },
    RecordType {
        name: "Mime",
        fields: &[
            ("type", "string"),
            ("prefixes", "string[]"),
            ("extensions", "string[]"),
        ],
    },
    RecordType {
        name: "MimeHeader",
        fields: &[("name", "string"), ("value", "string")],
    },
    RecordType {
        name: "ObjLifeCycle",
        fields: &[
            ("length", "time_distr"),
            ("variance", "float"),
            ("with_lmt", "float"),
            ("expires", "time_distr[]"),
            ("birthday", "time_distr"),
        ],
    },
    RecordType {
        name: "PopModel",
        fields: &[
            ("pop_distr", "PopDistr"),
            ("hot_set_frac", "float"),
            ("hot_set_prob", "float"),
            ("bhr_discrimination", "float"),
        ],
    },
    RecordType {
        name: "Phase",
        fields: &[
            ("name", "string"),
            ("goal", "Goal"),
            ("rptmstat", "Rptmstat"),
            ("script", "Code"),
            ("populus_factor_beg", "float"),
            ("populus_factor_end", "float"),
            ("load_factor_beg", "float"),
            ("load_factor_end", "float"),
            ("recur_factor_beg", "float"),
            ("recur_factor_end", "float"),
            ("special_msg_factor_beg", "float"),
            ("special_msg_factor_end", "float"),
            ("stats_samples", "StatsSample[]"),
            ("log_stats", "bool"),
            ("primary", "bool"),
            ("wait_wss_freeze", "bool"),
            ("synchronize", "bool"),
        ],
    },
    RecordType {
        name: "Goal",
        fields: &[
            ("duration", "time"),
            ("xactions", "int"),
            ("fill_size", "size"),
            ("errors", "float"),
        ],
    },
    RecordType {
        name: "Rptmstat",
        fields: &[
            ("sample_dur", "time"),
            ("load_delta", "float"),
            ("rptm_min", "time"),
            ("rptm_max", "time"),
        ],
    },
    RecordType {
        name: "StatsSample",
        fields: &[("name", "string"), ("start", "time"), ("capacity", "int")],
    },
    RecordType {
        name: "Bench",
        fields: &[
            ("peak_req_rate", "rate"),
            ("client_side", "BenchSide"),
            ("server_side", "BenchSide"),
            ("proxy_side", "BenchSide"),
        ],
    },
    RecordType {
        name: "BenchSide",
        fields: BENCH_SIDE,
    },
    RecordType {
        name: "AddrMap",
        fields: &[
            ("zone", "string"),
            ("addresses", "addr[]"),
            ("names", "addr[]"),
        ],
    },
    RecordType {
        name: "DnsResolver",
        fields: &[
            ("servers", "addr[]"),
            ("timeout", "time"),
            ("query_type", "string"),
            ("cache", "DnsCache"),
        ],
    },
    RecordType {
        name: "DnsCache",
        fields: &[("capacity", "int"), ("sharing_group", "string")],
    },
    RecordType {
        name: "NetPipe",
        fields: &[
            ("addresses", "addr[]"),
            ("kind", "string"),
            ("packet_delay", "time_distr"),
            ("bandwidth", "bwidth"),
            ("packet_loss", "float"),
            ("queue_packet_size", "int"),
            ("queue_byte_size", "size"),
            ("outgoing", "bool"),
        ],
    },
    RecordType {
        name: "Socket",
        fields: &[("nagle", "bool"), ("linger_tout", "time")],
    },
    RecordType {
        name: "Session",
        fields: &[
            ("busy_period", "Goal"),
            ("idle_period_duration", "time_distr"),
            ("heartbeat_notif_rate", "rate"),
        ],
    },
    RecordType {
        name: "ClientBehavior",
        fields: &[
            ("pop_model", "PopModel"),
            ("ranges", "Range[]"),
            ("recurrence", "float"),
            ("req_methods", "string[]"),
            ("req_types", "string[]"),
        ],
    },
    RecordType {
        name: "SslWrap",
        fields: &[
            ("protocols", "string[]"),
            ("root_certificate", "string"),
            ("sharing_group", "string"),
            ("rsa_key_sizes", "size[]"),
            ("generate_certificates", "bool"),
            ("certificates", "string[]"),
            ("ciphers", "string[]"),
            ("session_resumption", "float"),
            ("session_cache", "int"),
            ("ssl_config_file", "string"),
            ("verify_peer_certificate", "bool"),
            ("compression", "float"),
        ],
    },
    RecordType {
        name: "Cache",
        fields: &[("capacity", "size"), ("icp_port", "int")],
    },
    RecordType {
        name: "Range",
        fields: &[],
    },
    RecordType {
        name: "Acl",
        fields: &[],
    },
    RecordType {
        name: "KerberosWrap",
        fields: &[],
    },
    RecordType {
        name: "PolyMix3As",
        fields: &[("kind", "string")],
    },
    RecordType {
        name: "PolyMix4As",
        fields: SCHEME,
    },
    RecordType {
        name: "WebAxe4As",
        fields: SCHEME,
    },
    RecordType {
        name: "SrvLb4As",
        fields: SCHEME,
    },
    RecordType {
        name: "SpreadAs",
        fields: SCHEME,
    },
];

/// The record type of this name.
pub fn record(name: &str) -> Option<&'static RecordType> {
    TYPES.iter().find(|t| t.name == name)
}

/// The type of `ty`'s field `field`, if it has one.
pub fn field_type(ty: &str, field: &str) -> Option<&'static str> {
    let own = record(ty)?.fields.iter();
    let agent = match ty {
        "Robot" => AGENT.iter().chain(ROBOT.iter()),
        "Server" => AGENT.iter().chain(SERVER.iter()),
        "Proxy" => AGENT.iter().chain([].iter()),
        _ => [].iter().chain([].iter()),
    };
    own.chain(agent).find(|(n, _)| *n == field).map(|(_, t)| *t)
}

/// Scalar type names (with `[]` for arrays of them).
pub const SCALARS: &[&str] = &[
    "int",
    "float",
    "bool",
    "string",
    "time",
    "size",
    "rate",
    "bwidth",
    "addr",
    "uniq_id",
    "int_distr",
    "float_distr",
    "time_distr",
    "size_distr",
    "PopDistr",
    "Code",
];

/// Whether `name` is a type a declaration may use.
pub fn is_type(name: &str) -> bool {
    SCALARS.contains(&name) || record(name).is_some()
}
