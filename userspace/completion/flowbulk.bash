# SPDX-License-Identifier: GPL-2.0
# bash completion for flowbulk(8): objects, commands, families, keywords by
# their position, and the names of tables and flowtables that exist (read
# with flowbulk itself, which needs the privilege to list nftables).

# _flowbulk_names FLOWBULK COLUMN ARGS...: column COLUMN (1-based) of the
# text listing `FLOWBULK ARGS...`, header left out. Names with blanks are
# not offered (the text table separates columns with blanks).
_flowbulk_names() {
	local tool=$1 column=$2
	shift 2
	"$tool" "$@" 2>/dev/null | awk -v c="$column" 'NR > 1 && NF >= c { print $c }'
}

_flowbulk() {
	local cur prev words=("${COMP_WORDS[@]}") i object='' command='' candidates=''
	local tool=${COMP_WORDS[0]} args=() nargs netns=()
	cur=${COMP_WORDS[COMP_CWORD]}
	prev=${COMP_WORDS[COMP_CWORD - 1]}
	COMPREPLY=()

	case $prev in
	-f | --file)
		mapfile -t COMPREPLY < <(compgen -f -- "$cur")
		return
		;;
	-n | -netns | --netns)
		mapfile -t COMPREPLY < <(compgen -W "$(ls /run/netns 2>/dev/null)" -- "$cur")
		return
		;;
	esac
	# The object, the command and the arguments typed so far (options
	# skipped).
	for ((i = 1; i < COMP_CWORD; i++)); do
		case ${words[i]} in
		-f | --file) i=$((i + 1)) ;;
		-n | -netns | --netns)
			# Names are read in that namespace, as the command will act.
			netns=(-n "${words[i + 1]}")
			i=$((i + 1))
			;;
		-*) ;;
		*)
			if [ -z "$object" ]; then
				object=${words[i]}
			elif [ -z "$command" ]; then
				command=${words[i]}
			else
				args+=("${words[i]}")
			fi
			;;
		esac
	done
	# attach and detach take FAMILY TABLE FLOWTABLE right after the object.
	case $object in
	attach | detach)
		if [ -n "$command" ] && [ "$command" != list ]; then
			args=("$command" "${args[@]}")
			command=ref
		fi
		;;
	flowtable)
		# flowtable device { add | delete } FAMILY TABLE NAME DEV[,DEV...]
		if [ "$command" = device ] && [ ${#args[@]} -gt 0 ]; then
			command=device-${args[0]}
			args=("${args[@]:1}")
		fi
		;;
	esac
	nargs=${#args[@]}

	if [ -z "$object" ]; then
		if [[ $cur == -* ]]; then
			candidates='-j --json -p --pretty -s --statistics -f --file -c --check -e --echo -n --netns -V --version -h --help'
		else
			candidates='table flowtable offload attach detach stats monitor help'
		fi
	elif [ -z "$command" ]; then
		case $object in
		table | offload) candidates='add delete list show help' ;;
		flowtable) candidates='add delete device list show help' ;;
		attach) candidates='list show ip ip6 inet help' ;;
		detach) candidates='ip ip6 inet help' ;;
		stats) candidates='show reset help' ;;
		monitor) candidates='interval count help' ;;
		*) candidates='help' ;;
		esac
	elif [ "$command" = device ]; then
		candidates='add delete help'
	elif [ "$object" = monitor ]; then
		case $prev in
		interval | count) ;;
		*) candidates='interval count' ;;
		esac
	elif [ "$command" = list ] || [ "$command" = show ]; then
		# list [FAMILY [TABLE [FLOWTABLE]]]: table list FAMILY NAME,
		# flowtable list FAMILY TABLE NAME, offload list FAMILY TABLE.
		case $nargs in
		0) [ "$object" = attach ] || candidates='ip ip6 inet' ;;
		1) [ "$object" = attach ] ||
			candidates=$(_flowbulk_names "$tool" 2 "${netns[@]}" table list "${args[0]}") ;;
		2) [ "$object" != flowtable ] ||
			candidates=$(_flowbulk_names "$tool" 3 "${netns[@]}" flowtable list "${args[0]}" "${args[1]}") ;;
		esac
	elif [ "$nargs" = 0 ]; then
		case $object in
		table | flowtable | offload | attach | detach) candidates='ip ip6 inet' ;;
		esac
	elif [ "$nargs" = 1 ]; then
		# TABLE: an existing one, except for table add.
		if [ "$object/$command" != table/add ]; then
			candidates=$(_flowbulk_names "$tool" 2 "${netns[@]}" table list "${args[0]}")
		fi
	elif [ "$nargs" = 2 ]; then
		# FLOWTABLE: an existing one, except for flowtable add.
		case $object/$command in
		table/*) ;;
		flowtable/add) ;;
		*) candidates=$(_flowbulk_names "$tool" 3 "${netns[@]}" flowtable list "${args[0]}" "${args[1]}") ;;
		esac
	else
		case $prev in
		hook) candidates='ingress early_ingress' ;;
		proto) candidates='tcp udp all' ;;
		position) candidates='top bottom after before' ;;
		priority) candidates='filter' ;;
		devices) candidates=$(ls /sys/class/net 2>/dev/null) ;;
		chain | after | before) ;; # a chain name or a rule handle
		*)
			case $object/$command in
			flowtable/add) candidates='hook priority devices counter' ;;
			flowtable/device-*) [ "$nargs" != 3 ] || candidates=$(ls /sys/class/net 2>/dev/null) ;;
			offload/add) candidates='proto counter chain position' ;;
			offload/delete) candidates='proto chain' ;;
			esac
			;;
		esac
	fi
	mapfile -t COMPREPLY < <(compgen -W "$candidates" -- "$cur")
}
complete -F _flowbulk flowbulk
