<?php
// The page of the classic experiments: a full phpinfo().
phpinfo();
