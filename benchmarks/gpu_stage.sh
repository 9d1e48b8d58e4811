# stage NAME SECONDS COMMAND...: the GPU scripts' one stage (benchmarks/gpu_check.sh, gpu_issues.sh;
# sourced): runs COMMAND with a time limit, appends its output to $out/NAME.log, prints the log's
# tail and sets status=1 when it fails.  With $stages set (a comma list), a stage not in it is skipped.
stage() {
    local name=$1 limit=$2
    shift 2
    if [ -n "${stages:-}" ]; then
        case ",$stages," in *",$name,"*) ;; *) return ;; esac
    fi
    echo "=== $name: $* ($(date -u +%H:%M:%S))"
    timeout "$limit" "$@" >>"$out/$name.log" 2>&1
    local rc=$?
    tail -n 30 "$out/$name.log"
    echo "=== $name: exit $rc ($(date -u +%H:%M:%S))"
    [ $rc -eq 0 ] || status=1
}
