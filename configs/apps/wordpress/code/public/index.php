<?php
// The front controller: WordPress's own (Debian installs it in /usr/share/wordpress).
require '/usr/share/wordpress/index.php';
